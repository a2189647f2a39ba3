"""RunFunction latency of compose-model-deployment, called in-process, on synthetic fleets.

Each configuration runs in a process of its own, so its peak RSS is its own:
the parent builds the RunFunctionRequest once (as Crossplane would send it on
the second pass, required resources filled) and hands it over serialized; the
child parses it, as gRPC would, and calls RunFunction repeatedly. The
deployment keeps 2 running replicas and places 2 more, so every call reads
every InferenceCluster and InferenceClass and its own ModelReplicas, keeps
replicas and scans every cluster. The other deployments' replicas are not in the
request: each cluster publishes what they hold (``status.capacity.pools[]``), so
they reach the deployment only through the clusters' summaries.

Two figures per configuration, each beside its own p99 target:

- steady state: one FunctionRunner for every call, as a served function runs.
  Objects whose uid and resourceVersion it has read before are not read
  again, so this is the cost when the fleet has not changed since the previous
  call (the common case: Crossplane calls again on every poll and every event).
- cold read: a new FunctionRunner for every call, and the process-wide caches of
  the read path forgotten (field checks, role and footprint shapes), so every
  object is read and every pool's view built: the first call after start-up, or
  a fleet that changed entirely. (Compiled CEL expressions stay cached:
  compiling happens once per process. The runner of the call before is
  collected before the call is timed: see ``_forget``.)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
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
from compose_model_deployment import clusters, own, pools, replicas
from compose_model_deployment.fn import FunctionRunner
from modelplane.capacity import occupancy
from modelplane.fnkit import serve, structs
from modelplane.scheduling import fit

_ROOT = Path(__file__).resolve().parent.parent
CLUSTERS = (10, 100, 1000)
OTHERS = (0, 500)
CALLS = 200
_NOISE = 0.1  # a difference within this share of a median is not a cost
# p99 targets in ms: (clusters, other replicas or None for any) -> (steady state, cold read).
TARGETS = {(100, 500): (3.0, 10.0), (1000, None): (20.0, 60.0)}


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
        """Objects the function reads: clusters, its own ModelReplicas, classes (the others only as summaries)."""
        return self.clusters + FleetSize(self.clusters, self.others).own_kept + 2

    @property
    def targets(self) -> tuple[float, float] | None:
        """The (steady state, cold read) p99 targets for this configuration, if there are some."""
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
    """Drop what earlier calls left: the read path's process-wide caches, and the runners they ran on.

    The caches are those of pure functions, keyed by content: the Struct readers' field checks,
    the replicas' role occupancies, the footprints of their shapes, how a shape fits a pool, the
    clusters' parts already read and the revisions of the shapes hashed. The compiled CEL
    expressions and RE2 patterns stay (compiling is once per process). A runner refers to itself
    (its compose callback), so what an earlier runner read is freed only by a full collection: it
    is collected here, outside the timing, as a served function, with its one runner, never has
    such garbage.
    """
    structs.forget()
    replicas._role_occupancy.cache_clear()
    occupancy._footprint.cache_clear()
    fit.pool_fit.cache_clear()
    clusters.forget()
    own.forget()
    pools.forget()
    gc.collect()


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
    return f"<= {target:g} ms {'meets' if p99 <= target else 'MISSES'}"


def report(figures: Sequence[Figures]) -> str:
    """The figures as printed lines: a table with each p99 beside its target, then growth ratios."""
    lines = [
        f"  {'clusters':>8} {'others':>6} | {'steady state':^34} | {'cold read':^34} | {'peak RSS':>8}",
        f"  {'x2 pools':>8} {'':>6} | {'median':>8} {'p99':>8} {'p99 target':>16} |"
        f" {'median':>8} {'p99':>8} {'p99 target':>16} |",
    ]
    for f in figures:
        steady, cold = f.targets if f.targets is not None else (None, None)
        lines.append(
            f"  {f.clusters:>8} {f.others:>6} | {f.warm_median:>6.2f}ms {f.warm_p99:>6.2f}ms"
            f" {_verdict(f.warm_p99, steady):>16} | {f.cold_median:>6.2f}ms {f.cold_p99:>6.2f}ms"
            f" {_verdict(f.cold_p99, cold):>16} | {f.peak_rss_mb:>5.0f} MB"
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
            f" / x{by[c, high].cold_median / by[c, low].cold_median:.2f} ({w:+.1f} / {k:+.1f} ms)"
            for c, (w, k) in added.items()
        ]
        lines.append(f"    other replicas {low} -> {high}: " + "; ".join(steps))
        first, last = min(added, default=0), max(added, default=0)
        if last in added:
            # The other replicas are not inputs: they only lengthen the clusters' published summaries.
            share = max(added[last][0] / by[last, low].warm_median, added[last][1] / by[last, low].cold_median)
            ratios = [added[last][i] / added[first][i] for i in (0, 1) if first != last and added[first][i] > 0]
            grew = max(ratios, default=0.0)
            # With a clusters x replicas term the replicas' cost would grow as the clusters do.
            term = share > _NOISE and grew > 0.1 * last / first
            linear = linear and not term
            lines.append(
                f"    {high - low} more replicas change the median by at most {share:+.0%} at {last} clusters"
                + (f" and grow x{grew:.1f} from {first} to {last} clusters (x{last / first:g})" if ratios else "")
                + f": {'a' if term else 'no'} clusters x replicas term"
                + (f" (within the {100 * _NOISE:.0f}% noise)" if share <= _NOISE else "")
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
