"""RunFunction latency of compose-model-deployment, called in-process, on synthetic fleets.

Each configuration runs in a process of its own, so its peak RSS is its own:
the parent builds the RunFunctionRequest once (as Crossplane would send it on
the second pass, required resources filled) and hands it over serialized; the
child parses it, as gRPC would, and calls RunFunction repeatedly. The
deployment keeps 2 running replicas and places 2 more, so every call reads the
whole fleet, keeps replicas and scans every cluster.

Two figures per configuration:

- steady state: one FunctionRunner for every call, as a served function runs.
  Fleet objects whose uid and resourceVersion it has read before are not read
  again, so this is the cost when the fleet has not changed since the previous
  call (the common case: Crossplane calls again on every poll and every event).
- cold read: a new FunctionRunner for every call, and the capacity counts of
  pools forgotten, so every object is read and every pool counted: the first
  call after start-up, or a fleet that changed entirely. (Compiled CEL
  expressions stay cached: compiling happens once per process.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from bench.fleet import FleetSize, request
from compose_model_deployment import fleet
from compose_model_deployment.fn import FunctionRunner
from modelplane.capacity import pools
from modelplane.fnkit import serve

_ROOT = Path(__file__).resolve().parent.parent
CLUSTERS = (10, 100, 1000)
OTHERS = (0, 500)
CALLS = 200
# p99 targets in ms: (clusters, other replicas or None for any) -> target.
TARGETS = {(100, 500): 10.0, (1000, None): 100.0}


@dataclass(frozen=True)
class Figures:
    """What one configuration measured; times in ms."""

    clusters: int
    others: int
    calls: int
    warm_median: float
    warm_p99: float
    cold_median: float
    cold_p99: float
    peak_rss_mb: float
    scheduled: str

    @property
    def inputs(self) -> int:
        """Objects the function reads: clusters, ModelReplicas (others and its own), classes."""
        return self.clusters + self.others + FleetSize(self.clusters, self.others).own_kept + 2

    @property
    def target(self) -> float | None:
        """The p99 target for this configuration, if there is one."""
        return TARGETS.get((self.clusters, self.others), TARGETS.get((self.clusters, None)))


def _p99(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def _scheduled(rsp: fnv1.RunFunctionResponse) -> str:
    return next((c.message for c in rsp.conditions if c.type == "Scheduled"), "no Scheduled condition")


def measure(req: fnv1.RunFunctionRequest, clusters: int, others: int, calls: int) -> Figures:
    """Call RunFunction ``calls`` times in steady state and ``calls`` times cold; in this process."""
    loop = asyncio.new_event_loop()
    runner = FunctionRunner()
    serve.settle()  # as the served function does before its first call
    scheduled = _scheduled(loop.run_until_complete(runner.RunFunction(req, None)))
    warm = []
    for _ in range(calls):
        start = time.perf_counter()
        loop.run_until_complete(runner.RunFunction(req, None))
        warm.append((time.perf_counter() - start) * 1e3)
    cold = []
    for _ in range(calls):
        fresh = FunctionRunner()
        _forget()
        start = time.perf_counter()
        loop.run_until_complete(fresh.RunFunction(req, None))
        cold.append((time.perf_counter() - start) * 1e3)
    loop.close()
    return Figures(
        clusters=clusters,
        others=others,
        calls=calls,
        warm_median=statistics.median(warm),
        warm_p99=_p99(warm),
        cold_median=statistics.median(cold),
        cold_p99=_p99(cold),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        scheduled=scheduled,
    )


def _forget() -> None:
    """Drop what earlier calls left in process-wide caches of pure functions (all keyed by content)."""
    fleet._role_holding.cache_clear()
    fleet._is_label.cache_clear()
    fleet._is_subdomain.cache_clear()
    pools._pool_nodes.cache_clear()


def run_configuration(clusters: int, others: int, calls: int) -> Figures:
    """Measure one configuration in a child process."""
    req = request(FleetSize(clusters, others))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "request.bin"
        path.write_bytes(req.SerializeToString())
        out = subprocess.run(
            [sys.executable, "-m", "bench.latency", "--child", str(path), str(clusters), str(others), str(calls)],
            check=True,
            capture_output=True,
            text=True,
            cwd=_ROOT,
        )
    return Figures(**json.loads(out.stdout))


def _verdict(p99: float, target: float | None) -> str:
    if target is None:
        return ""
    return f"<= {target:g} ms: {'meets' if p99 <= target else 'MISSES'}"


def report(figures: Sequence[Figures]) -> str:
    """The figures as printed lines: a table, then growth ratios."""
    lines = [
        f"  {'clusters':>8} {'others':>6} | {'steady state':^26} | {'cold read':^26} | {'peak RSS':>8} | p99 target",
        f"  {'x2 pools':>8} {'':>6} | {'median':>8} {'p99':>8} {'':>8} | {'median':>8} {'p99':>8} {'':>8} |",
    ]
    for f in figures:
        lines.append(
            f"  {f.clusters:>8} {f.others:>6} | {f.warm_median:>6.2f}ms {f.warm_p99:>6.2f}ms {'':>8} |"
            f" {f.cold_median:>6.2f}ms {f.cold_p99:>6.2f}ms {'':>8} | {f.peak_rss_mb:>5.0f} MB |"
            f" steady {_verdict(f.warm_p99, f.target)}; cold {_verdict(f.cold_p99, f.target)}"
            if f.target is not None
            else f"  {f.clusters:>8} {f.others:>6} | {f.warm_median:>6.2f}ms {f.warm_p99:>6.2f}ms {'':>8} |"
            f" {f.cold_median:>6.2f}ms {f.cold_p99:>6.2f}ms {'':>8} | {f.peak_rss_mb:>5.0f} MB |"
        )
    lines += _growth(figures)
    schedules = sorted({f"{f.clusters}x{f.others}: {f.scheduled}" for f in figures})
    lines.append("  every call: " + "; ".join(schedules))
    return "\n".join(lines)


def _growth(figures: Sequence[Figures]) -> list[str]:
    """Median ratios between sizes, and whether they show cost linear in clusters + replicas."""
    by = {(f.clusters, f.others): f for f in figures}
    clusters, others = sorted({f.clusters for f in figures}), sorted({f.others for f in figures})
    lines = ["  growth of the median, steady / cold:"]
    linear = True
    for o in others:
        steps = []
        for a, b in pairwise(c for c in clusters if (c, o) in by):
            warm, cold = by[b, o].warm_median / by[a, o].warm_median, by[b, o].cold_median / by[a, o].cold_median
            linear = linear and max(warm, cold) <= b / a
            steps.append(f"{a} -> {b} (x{b / a:g}): x{warm:.2f} / x{cold:.2f}")
        if steps:
            lines.append(f"    clusters, {o} other replicas: " + "; ".join(steps))
    if len(others) > 1:
        low, high = others[0], others[-1]
        added = {
            c: (by[c, high].warm_median - by[c, low].warm_median, by[c, high].cold_median - by[c, low].cold_median)
            for c in clusters
            if (c, low) in by and (c, high) in by
        }
        steps = [
            f"at {c} clusters x{by[c, high].warm_median / by[c, low].warm_median:.2f}"
            f" / x{by[c, high].cold_median / by[c, low].cold_median:.2f} (+{w:.1f} / +{k:.1f} ms)"
            for c, (w, k) in added.items()
        ]
        lines.append(f"    other replicas {low} -> {high}: " + "; ".join(steps))
        first, last = min(added, default=0), max(added, default=0)
        ratios = [added[last][i] / added[first][i] for i in (0, 1) if first != last and added[first][i] > 0]
        if ratios:
            grew = max(ratios)
            # With a clusters x replicas term the replicas' cost would grow as the clusters do.
            linear = linear and grew <= 0.1 * last / first
            lines.append(
                f"    the cost of {high - low} more replicas grows x{grew:.1f} from {first} to {last} clusters"
                f" (x{last / first:g}): {'no' if grew <= 0.1 * last / first else 'a'} clusters x replicas term"
            )
    verdict = "no worse than linearly" if linear else "WORSE than linearly"
    lines.append(
        f"    cost grows {verdict} in clusters + replicas"
        " (each step in clusters costs at most its own factor; replicas cost about the same at any fleet size)"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Print the latency table, or (``--child``) measure one configuration and print it as JSON."""
    parser = argparse.ArgumentParser(description="RunFunction latency of compose-model-deployment")
    parser.add_argument("--child", nargs=4, metavar=("REQUEST", "CLUSTERS", "OTHERS", "CALLS"))
    parser.add_argument("--calls", type=int, default=CALLS)
    parser.add_argument("--clusters", type=int, nargs="*", default=list(CLUSTERS))
    parser.add_argument("--others", type=int, nargs="*", default=list(OTHERS))
    args = parser.parse_args(argv)
    if args.child:
        path, clusters, others, calls = args.child
        req = fnv1.RunFunctionRequest.FromString(Path(path).read_bytes())
        print(json.dumps(asdict(measure(req, int(clusters), int(others), int(calls)))))
        return 0
    print(f"RunFunction of compose-model-deployment, in-process ({args.calls} calls per figure)")
    figures = [run_configuration(c, o, args.calls) for c in args.clusters for o in args.others]
    print(report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
