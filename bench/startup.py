"""Start-up of every function: time from process start to its first gRPC answer, and idle RSS after it.

Each function is started as Crossplane's Development runtime would run it
(``python -m compose_<kind> --insecure --address 127.0.0.1:<free port>``),
called once over gRPC, left idle, and its resident memory read from /proc.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from modelplane.kinds import API_VERSION, KINDS, Kind
from tests.loopback import free_port

START_TARGET_MS = 1000.0
RSS_TARGET_MB = 80.0
_DEADLINE = 30.0
_IDLE = 1.0


@dataclass(frozen=True)
class Startup:
    """One function's start-up figures."""

    function: str
    first_answer_ms: float  # median over the runs
    slowest_ms: float
    idle_rss_mb: float  # the largest over the runs


def _request(kind: Kind) -> fnv1.RunFunctionRequest:
    metadata = {"name": "probe", "namespace": "default"} if kind.namespaced else {"name": "probe"}
    xr = {"apiVersion": API_VERSION, "kind": kind.kind, "metadata": metadata, "spec": {}}
    return fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="bench"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _first_answer(kind: Kind, idle: float) -> tuple[float, float]:
    """Start the function; return ms until it answered and its idle RSS in MB."""
    address = f"127.0.0.1:{free_port()}"
    host, port = address.rsplit(":", 1)
    req = _request(kind)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", kind.module, "--insecure", "--address", address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # Poll the port ourselves: gRPC's reconnect backoff would add up to a second.
        while True:
            if proc.poll() is not None or time.perf_counter() - start > _DEADLINE:
                err = proc.stderr.read().decode() if proc.stderr else ""
                msg = f"{kind.function} did not start: {err}"
                raise RuntimeError(msg)
            try:
                socket.create_connection((host, int(port)), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.002)
        with grpc.insecure_channel(address) as channel:
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]  # generated stub
            stub.RunFunction(req, timeout=_DEADLINE)
        answered = (time.perf_counter() - start) * 1e3
        time.sleep(idle)
        return answered, _rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def measure(kind: Kind, runs: int = 3, idle: float = _IDLE) -> Startup:
    """Start ``kind``'s function ``runs`` times; its RSS is read after ``idle`` seconds of idling."""
    figures = [_first_answer(kind, idle) for _ in range(runs)]
    times = [t for t, _ in figures]
    return Startup(kind.function, statistics.median(times), max(times), max(r for _, r in figures))


def report(startups: Sequence[Startup]) -> str:
    """The start-up figures as printed lines."""
    lines = [f"  {'function':<28} {'first answer':>12} {'slowest':>9} {'idle RSS':>9}"]
    for s in startups:
        verdict_time = "meets" if s.first_answer_ms <= START_TARGET_MS else "MISSES"
        verdict_rss = "meets" if s.idle_rss_mb <= RSS_TARGET_MB else "MISSES"
        lines.append(
            f"  {s.function:<28} {s.first_answer_ms:>9.0f} ms {s.slowest_ms:>6.0f} ms {s.idle_rss_mb:>6.1f} MB"
            f"   (<= {START_TARGET_MS:g} ms: {verdict_time}; <= {RSS_TARGET_MB:g} MB: {verdict_rss})"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print every function's start-up figures."""
    parser = argparse.ArgumentParser(description="Start-up time and idle RSS of every function")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"Function start-up: process start to first gRPC answer (median of {args.runs}), idle RSS after it")
    print(report([measure(kind, args.runs) for kind in KINDS]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
