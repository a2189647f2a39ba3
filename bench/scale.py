"""Fleet scale: the functions that read the fleet, at 1,000 InferenceClusters x 2 pools and 10,000 ModelReplicas.

A ModelDeployment reads every InferenceCluster and InferenceClass and only its own
ModelReplicas; each cluster publishes what the fleet's replicas hold on it
(``status.capacity.pools[]``). The requests, as Crossplane sends them on the second pass
(required resources filled):

- compose-model-deployment placing 2 more replicas of a 4-replica deployment, beside 9,998
  other replicas the clusters' summaries count;
- the same for a deployment at the XRD's maximum of 1,000 replicas, all running: its own replicas
  are its required resources and, with their endpoints, its observed composed resources, and its
  response is the largest any function sends;
- compose-inference-cluster: the ModelReplicas labelled with its cluster (it counts their GPUs);
- compose-model-service: the ModelEndpoints its matchLabels select (the fleet's are all in its namespace).
- the same with a matchExpressions selector: every ModelEndpoint of its namespace, of which it
  reads whole only those the selector matches.

The last three ask Crossplane for what they read by label: their first call's requirements are
answered from the fleet's objects as Crossplane answers them, and the second call is measured.

Each runs in a process of its own and reports: the request's and the response's serialized size,
the time to parse the request (what gRPC does before RunFunction), RunFunction's p50 and p95 in
steady state (one runner for every call, as served) and cold (a new runner, caches forgotten),
the most one cold call allocates (tracemalloc) and the process's peak RSS. Then
compose-model-deployment is served over gRPC and called with the first request.

Then the fleet as deployments make it: the replicas are those of 1,000 deployments of 10
replicas each, all running. One of them gets its request measured as above (its size and its
steady-state p95 beside their targets), and a full resync calls each deployment once, each with
its own request (its XR, its composed resources and its listed replicas; the clusters and
classes the same objects, same uid and resourceVersion, in all of them) on one runner as served:
the CPU time it takes, parsing each request as gRPC does included, beside its target.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import io
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import grpc
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from bench import latency
from bench.fleet import (
    DeploymentFleet,
    FleetSize,
    answer,
    cluster_request,
    deployment_fleet_clusters,
    fleet_deployment,
    fleet_request,
    own_part,
    request,
    service_request,
    shared_part,
)
from modelplane.fnkit import serve
from modelplane.kinds import BY_KIND
from tests.loopback import free_port, wait_listening

_ROOT = Path(__file__).resolve().parent.parent
CLUSTERS = 1000
REPLICAS = 10000
CALLS = 10
OWN_MAX = 1000  # the ModelDeployment XRD's maximum of spec.replicas
# Crossplane receives responses with gRPC's default limit: it sets no MaxCallRecvMsgSize.
CROSSPLANE_RECEIVE_LIMIT = 4 * 1024 * 1024
# p95 budgets in ms for RunFunction at the full size. Crossplane gives a whole XR reconcile 2 minutes
# and calls each function at least twice in it (once more when its requirements change); the
# budget is what keeps a fleet of deployments, each called on every poll, within a core or two.
STEADY_P95_MS = 1000.0
COLD_P95_MS = 3000.0
# The fleet as 1,000 deployments of PER replicas make it: one deployment's request and RunFunction,
# and the CPU a served function spends when every deployment is called once (a resync).
PER = 10
FLEET_REQUEST_BYTES = 3_000_000
FLEET_STEADY_P95_MS = 60.0
RESYNC_CPU_S = 60.0
_DEADLINE = 120.0


@dataclass(frozen=True)
class Case:
    """One function and the request it gets from a fleet."""

    name: str  # may name {own}, the large deployment's replicas, and {deployments}, the fleet's
    function: str
    build: Callable[[int, int], fnv1.RunFunctionRequest]  # (clusters, replicas) -> request


def _deployment(clusters: int, replicas: int) -> fnv1.RunFunctionRequest:
    return request(FleetSize(clusters, replicas - 2))


def own(replicas: int) -> int:
    """How many replicas the large deployment has: a tenth of the fleet, at most the XRD's maximum."""
    return min(OWN_MAX, max(1, replicas // 10))


def _large_deployment(clusters: int, replicas: int) -> fnv1.RunFunctionRequest:
    return request(FleetSize(clusters, replicas - own(replicas), own_kept=own(replicas), own_new=0))


def _answered(function: str, first: tuple[fnv1.RunFunctionRequest, list[dict[str, Any]]]) -> fnv1.RunFunctionRequest:
    """``function``'s second request: its first one with what it required answered from the fleet's objects."""
    req, objects = first
    loop = asyncio.new_event_loop()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # its log line says it waits for its requirements
            rsp = loop.run_until_complete(_runner_factory(function)().RunFunction(req, None))
    finally:
        loop.close()
    answer(req, rsp.requirements, objects)
    return req


def _cluster(clusters: int, replicas: int) -> fnv1.RunFunctionRequest:
    return _answered("compose-inference-cluster", cluster_request(FleetSize(clusters, replicas - 2)))


def _service(clusters: int, replicas: int) -> fnv1.RunFunctionRequest:
    return _answered("compose-model-service", service_request(FleetSize(clusters, replicas - 2)))


def _service_by_expression(clusters: int, replicas: int) -> fnv1.RunFunctionRequest:
    return _answered("compose-model-service", service_request(FleetSize(clusters, replicas - 2), expressions=True))


def deployments(replicas: int) -> int:
    """How many deployments of ``PER`` replicas make a fleet of ``replicas`` replicas (at least one)."""
    return max(1, replicas // PER)


def deployment_fleet(clusters: int, replicas: int) -> DeploymentFleet:
    """The fleet of ``deployments(replicas)`` deployments of ``PER`` running replicas each."""
    return DeploymentFleet(clusters, deployments(replicas), PER)


def _fleet_deployment(clusters: int, replicas: int) -> fnv1.RunFunctionRequest:
    return fleet_request(deployment_fleet(clusters, replicas), 0)


CASES = (
    Case("deployment, places 2 of 4", "compose-model-deployment", _deployment),
    Case("deployment, keeps all {own}", "compose-model-deployment", _large_deployment),
    Case("cluster, counts its replicas", "compose-inference-cluster", _cluster),
    Case("service, routes 2 endpoints", "compose-model-service", _service),
    Case("service, by expression", "compose-model-service", _service_by_expression),
)
FLEET_CASE = Case(f"one of {{deployments}} x {PER}, keeps {PER}", "compose-model-deployment", _fleet_deployment)


@dataclass(frozen=True)
class Figures:
    """What one case measured; sizes in bytes, times in ms, memory in MB."""

    name: str
    function: str
    request_bytes: int
    response_bytes: int
    parse_ms: float
    steady_p50: float
    steady_p95: float
    steady_cpu: float  # p50 of the CPU time: what the call costs on a machine busy with other work
    cold_p50: float
    cold_p95: float
    cold_cpu: float
    call_peak_mb: float  # the most one cold call allocates (tracemalloc)
    peak_rss_mb: float
    summary: str  # the function's first condition, to see that it did the work


def _p95(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _runner_factory(function: str) -> Callable[[], Any]:
    module = importlib.import_module(f"{BY_KIND_FUNCTION[function].module}.fn")
    factory: Callable[[], Any] = module.FunctionRunner
    return factory


BY_KIND_FUNCTION = {k.function: k for k in BY_KIND.values()}


def _summary(rsp: fnv1.RunFunctionResponse) -> str:
    return next((f"{c.type}: {c.message}" for c in rsp.conditions), "no condition")


def measure(name: str, function: str, data: bytes, calls: int) -> Figures:
    """Parse ``data`` and call ``function``'s RunFunction ``calls`` times in steady state and cold, in this process."""
    parse = []
    for _ in range(3):
        start = time.perf_counter()
        req = fnv1.RunFunctionRequest.FromString(data)
        parse.append((time.perf_counter() - start) * 1e3)
    make = _runner_factory(function)
    loop = asyncio.new_event_loop()
    runner = make()
    serve.settle()  # as the served function does before its first call
    rsp = loop.run_until_complete(runner.RunFunction(req, None))
    steady, cold, steady_cpu, cold_cpu = [], [], [], []
    for _ in range(calls):
        start, cpu = time.perf_counter(), time.process_time()
        loop.run_until_complete(runner.RunFunction(req, None))
        steady.append((time.perf_counter() - start) * 1e3)
        steady_cpu.append((time.process_time() - cpu) * 1e3)
    for _ in range(calls):
        fresh = make()
        latency._forget()
        start, cpu = time.perf_counter(), time.process_time()
        loop.run_until_complete(fresh.RunFunction(req, None))
        cold.append((time.perf_counter() - start) * 1e3)
        cold_cpu.append((time.process_time() - cpu) * 1e3)
    fresh = make()
    latency._forget()
    tracemalloc.start()
    loop.run_until_complete(fresh.RunFunction(req, None))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    loop.close()
    return Figures(
        name=name,
        function=function,
        request_bytes=len(data),
        response_bytes=rsp.ByteSize(),
        parse_ms=statistics.median(parse),
        steady_p50=statistics.median(steady),
        steady_p95=_p95(steady),
        steady_cpu=statistics.median(steady_cpu),
        cold_p50=statistics.median(cold),
        cold_p95=_p95(cold),
        cold_cpu=statistics.median(cold_cpu),
        call_peak_mb=peak / 2**20,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        summary=_summary(rsp),
    )


def run_case(case: Case, clusters: int, replicas: int, calls: int) -> Figures:
    """Build ``case``'s request and measure it in a child process."""
    data = case.build(clusters, replicas).SerializeToString()
    name = case.name.format(own=own(replicas), deployments=deployments(replicas))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "request.bin"
        path.write_bytes(data)
        out = subprocess.run(
            [sys.executable, "-m", "bench.scale", "--child", name, case.function, str(path), str(calls)],
            check=True,
            capture_output=True,
            text=True,
            cwd=_ROOT,
        )
    # The function's own log lines come first on stdout; the figures are the last line.
    return Figures(**json.loads(out.stdout.strip().splitlines()[-1]))


@dataclass(frozen=True)
class Served:
    """compose-model-deployment served over gRPC (insecure, loopback) and called with a fleet request."""

    request_bytes: int
    calls: int
    p50: float
    p95: float
    peak_rss_mb: float
    summary: str


def _wait_listening(address: str, proc: subprocess.Popen[bytes]) -> None:
    if not wait_listening(address, lambda: proc.poll() is None, _DEADLINE):
        msg = f"compose-model-deployment did not listen on {address}"
        raise RuntimeError(msg)


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def served(clusters: int, replicas: int, calls: int) -> Served:
    """Serve compose-model-deployment and call it ``calls`` times over gRPC with the fleet request."""
    req = _deployment(clusters, replicas)
    kind = BY_KIND_FUNCTION["compose-model-deployment"]
    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(  # our own interpreter and module
        [sys.executable, "-m", kind.module, "--insecure", "--address", address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=_ROOT,
    )
    try:
        _wait_listening(address, proc)
        # The channel keeps gRPC's default 4 MiB receive limit for the response, as Crossplane does.
        with grpc.insecure_channel(address) as channel:
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]  # generated stub is untyped
            rsp = stub.RunFunction(req, timeout=_DEADLINE)  # the first call reads the whole fleet
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                stub.RunFunction(req, timeout=_DEADLINE)
                times.append((time.perf_counter() - start) * 1e3)
        peak = _peak_rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    return Served(req.ByteSize(), calls, statistics.median(times), _p95(times), peak, _summary(rsp))


@dataclass(frozen=True)
class Resync:
    """Every deployment of the fleet called once, on one runner as served; CPU in seconds."""

    deployments: int
    parse_cpu_s: float  # parsing each request, as gRPC does before RunFunction
    run_cpu_s: float  # RunFunction
    wall_s: float
    first_ms: float  # the first call's CPU: it reads every cluster
    slowest_ms: float  # the slowest call after the first
    peak_rss_mb: float
    scheduled: dict[str, int]  # each Scheduled condition's message, and how many calls gave it

    @property
    def cpu_s(self) -> float:
        """What the resync costs the served function: parsing and RunFunction."""
        return self.parse_cpu_s + self.run_cpu_s


def _write_parts(path: Path, fleet: DeploymentFleet) -> None:
    """Write the shared part of every request (clusters, classes), then each deployment's own, length-prefixed.

    Concatenated, the shared part and one deployment's part are that deployment's request (protobuf
    merges them as it parses): the clusters and classes are the same objects in every request.
    """
    with path.open("wb") as out:
        for part in (shared_part(deployment_fleet_clusters(fleet)), *_own_parts(fleet)):
            data = part.SerializeToString()
            out.write(len(data).to_bytes(8, "little"))
            out.write(data)


def _own_parts(fleet: DeploymentFleet) -> Iterator[fnv1.RunFunctionRequest]:
    for d in range(fleet.deployments):
        yield own_part(*fleet_deployment(fleet, d))


def _read_parts(path: Path) -> list[bytes]:
    data = path.read_bytes()
    parts, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 8], "little")
        parts.append(data[at + 8 : at + 8 + size])
        at += 8 + size
    return parts


def measure_resync(path: Path) -> Resync:
    """Call compose-model-deployment once per deployment of the parts at ``path``, on one runner, in this process."""
    shared, *own_parts = _read_parts(path)
    loop = asyncio.new_event_loop()
    runner = _runner_factory("compose-model-deployment")()
    serve.settle()  # as the served function does before its first call
    parse, run, wall = 0.0, 0.0, 0.0
    cpu_ms: list[float] = []
    scheduled: Counter[str] = Counter()
    for part in own_parts:
        data = shared + part  # the request as gRPC receives it
        start, cpu = time.perf_counter(), time.process_time()
        req = fnv1.RunFunctionRequest.FromString(data)
        parsed = time.process_time()
        rsp = loop.run_until_complete(runner.RunFunction(req, None))
        done = time.process_time()
        wall += time.perf_counter() - start
        parse += parsed - cpu
        run += done - parsed
        cpu_ms.append((done - cpu) * 1e3)
        scheduled[_summary(rsp)] += 1
    loop.close()
    return Resync(
        deployments=len(own_parts),
        parse_cpu_s=parse,
        run_cpu_s=run,
        wall_s=wall,
        first_ms=cpu_ms[0] if cpu_ms else 0.0,
        slowest_ms=max(cpu_ms[1:], default=0.0),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        scheduled=dict(sorted(scheduled.items())),
    )


def resync(clusters: int, replicas: int) -> Resync:
    """Build the fleet's requests and measure a full resync in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "parts.bin"
        _write_parts(path, deployment_fleet(clusters, replicas))
        out = subprocess.run(
            [sys.executable, "-m", "bench.scale", "--resync", str(path)],
            check=True,
            capture_output=True,
            text=True,
            cwd=_ROOT,
        )
    return Resync(**json.loads(out.stdout.strip().splitlines()[-1]))


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def _verdict(value: float, limit: float) -> str:
    return "meets" if value <= limit else "MISSES"


_HEADER = (
    f"  {'case':<32} {'function':<26} | {'request':>8} {'response':>9} | {'parse':>7} |"
    f" {'steady p50':>10} {'p95':>7} {'cpu':>7} | {'cold p50':>8} {'p95':>7} {'cpu':>7} |"
    f" {'one call':>8} {'RSS':>7}"
)


def _row(f: Figures) -> str:
    return (
        f"  {f.name:<32} {f.function:<26} | {_mb(f.request_bytes):>8} {_mb(f.response_bytes):>9} |"
        f" {f.parse_ms:>5.0f}ms | {f.steady_p50:>8.0f}ms {f.steady_p95:>5.0f}ms {f.steady_cpu:>5.0f}ms |"
        f" {f.cold_p50:>6.0f}ms {f.cold_p95:>5.0f}ms {f.cold_cpu:>5.0f}ms |"
        f" {f.call_peak_mb:>5.1f} MB {f.peak_rss_mb:>4.0f} MB"
    )


def report(figures: Sequence[Figures], grpc_figures: Served | None) -> str:
    """The figures as printed lines: a table, the budgets and limits, and the gRPC round trip."""
    lines = [_HEADER, *(_row(f) for f in figures)]
    largest_request = max(f.request_bytes for f in figures)
    largest_response = max(f.response_bytes for f in figures)
    lines.append(
        f"  largest request {_mb(largest_request)} <= the functions' limit {_mb(serve.MAX_MESSAGE_BYTES)}:"
        f" {_verdict(largest_request, serve.MAX_MESSAGE_BYTES)}; largest response {_mb(largest_response)}"
        f" <= Crossplane's receive limit {_mb(CROSSPLANE_RECEIVE_LIMIT)}:"
        f" {_verdict(largest_response, CROSSPLANE_RECEIVE_LIMIT)}"
    )
    lines += [
        f"  {f.name}: steady p95 {f.steady_p95:.0f} ms <= {STEADY_P95_MS:g} ms:"
        f" {_verdict(f.steady_p95, STEADY_P95_MS)}; cold p95 {f.cold_p95:.0f} ms <= {COLD_P95_MS:g} ms:"
        f" {_verdict(f.cold_p95, COLD_P95_MS)}"
        for f in figures
    ]
    lines += [f"  {f.name}: {f.summary}" for f in figures]
    if grpc_figures is not None:
        g = grpc_figures
        lines.append(
            f"  over gRPC, compose-model-deployment served, {_mb(g.request_bytes)} request: round trip"
            f" p50 {g.p50:.0f} ms, p95 {g.p95:.0f} ms ({g.calls} calls, steady state), server peak RSS"
            f" {g.peak_rss_mb:.0f} MB; {g.summary}"
        )
    return "\n".join(lines)


def report_fleet(one: Figures, whole: Resync) -> str:
    """The fleet of deployments: one deployment's request and RunFunction, and the full resync, beside targets."""
    scheduled = "; ".join(f"{message} x{n}" for message, n in whole.scheduled.items())
    return "\n".join(
        [
            _HEADER,
            _row(one),
            f"  {one.name}: request {_mb(one.request_bytes)} <= {_mb(FLEET_REQUEST_BYTES)}:"
            f" {_verdict(one.request_bytes, FLEET_REQUEST_BYTES)}; steady p95 {one.steady_p95:.1f} ms"
            f" <= {FLEET_STEADY_P95_MS:g} ms: {_verdict(one.steady_p95, FLEET_STEADY_P95_MS)}; {one.summary}",
            f"  full resync, each of the {whole.deployments} deployments called once on one runner as served:"
            f" CPU {whole.cpu_s:.1f} s <= {RESYNC_CPU_S:g} s: {_verdict(whole.cpu_s, RESYNC_CPU_S)}"
            f" (parsing {whole.parse_cpu_s:.1f} s, RunFunction {whole.run_cpu_s:.1f} s); wall {whole.wall_s:.1f} s;"
            f" first call {whole.first_ms:.0f} ms CPU, slowest after it {whole.slowest_ms:.0f} ms;"
            f" peak RSS {whole.peak_rss_mb:.0f} MB",
            f"  every call of the resync: {scheduled}",
        ]
    )


def measure_all(clusters: int, replicas: int, calls: int) -> tuple[list[Figures], Served]:
    """Every case at one size, then the gRPC round trip."""
    return [run_case(c, clusters, replicas, calls) for c in CASES], served(clusters, replicas, calls)


def measure_fleet(clusters: int, replicas: int, calls: int) -> tuple[Figures, Resync]:
    """The fleet of deployments making up ``replicas``: one deployment's figures, then the full resync."""
    return run_case(FLEET_CASE, clusters, replicas, calls), resync(clusters, replicas)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the scale tables, or (``--child``, ``--resync``) measure one case or the resync and print it as JSON."""
    parser = argparse.ArgumentParser(description="Fleet-scale figures of the functions that read the fleet")
    parser.add_argument("--child", nargs=4, metavar=("NAME", "FUNCTION", "REQUEST", "CALLS"))
    parser.add_argument("--resync", metavar="PARTS")
    parser.add_argument("--clusters", type=int, default=CLUSTERS)
    parser.add_argument("--replicas", type=int, default=REPLICAS)
    parser.add_argument("--calls", type=int, default=CALLS)
    args = parser.parse_args(argv)
    if args.child:
        name, function, path, calls = args.child
        print(json.dumps(asdict(measure(name, function, Path(path).read_bytes(), int(calls)))))
        return 0
    if args.resync:
        print(json.dumps(asdict(measure_resync(Path(args.resync)))))
        return 0
    print(f"Fleet scale: {args.clusters} InferenceClusters x 2 pools, {args.replicas} ModelReplicas")
    print(report(*measure_all(args.clusters, args.replicas, args.calls)), flush=True)
    print(fleet_header(args.clusters, args.replicas))
    print(report_fleet(*measure_fleet(args.clusters, args.replicas, args.calls)))
    return 0


def fleet_header(clusters: int, replicas: int) -> str:
    """The heading of the fleet of deployments' figures."""
    return (
        f"\nThe fleet as deployments make it: {clusters} InferenceClusters x 2 pools, {deployments(replicas)}"
        f" ModelDeployments x {PER} running replicas"
    )


if __name__ == "__main__":
    sys.exit(main())
