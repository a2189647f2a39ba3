"""``modelplane preview`` at fleet scale: CPU seconds to preview a synthetic fleet with ``--assume-ready``.

The fleets are ``bench.preview_fleet``'s: Existing clusters with an H100 and an L4 pool,
deployments of three replicas, a service for most. Each preview runs in a process of its own
(nothing remembered from another run) and reports the CPU time of loading, admitting,
simulating and rendering the tables, beside its target, then the growth from the smaller fleet
to the larger one: a simulation that renders an XR only when something it reads changed grows
with the fleet, not with its square. ``python -m bench.preview`` prints these rows alone.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import preview_fleet

# (clusters, replicas, services): the fleet of the target, and one a quarter of its size.
LARGE = (100, 1000, 300)
SMALL = (25, 250, 75)
TARGET_SECONDS = 10.0  # CPU seconds for LARGE
TARGET_GROWTH = 5.0  # LARGE / SMALL, for a fleet four times the size


@dataclass(frozen=True)
class Figure:
    """One preview's figures."""

    clusters: int
    replicas: int
    services: int
    cpu_seconds: float
    exit_code: int
    passes: int


def measure(clusters: int, replicas: int, services: int) -> Figure:
    """Preview a synthetic fleet in a process of its own; return its CPU time."""
    with tempfile.TemporaryDirectory() as tmp:
        preview_fleet.write(Path(tmp), clusters, replicas, services)
        out = subprocess.run(
            [sys.executable, "-m", "bench.preview", tmp],
            capture_output=True,
            text=True,
            check=True,
        )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return Figure(clusters, replicas, services, found["cpu"], found["exit"], found["passes"])


def _child(directory: str) -> None:
    """Preview ``directory`` (``--assume-ready``) through the CLI; print its CPU seconds, exit code and passes.

    The command's modules are imported first: what is measured is the preview, not its imports.
    """
    import modelplane.preview.command  # noqa: F401, PLC0415 - imported before the clock starts
    from modelplane.cli import main  # noqa: PLC0415

    start = time.process_time()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(["preview", directory, "--assume-ready", "--width", "120", "--color", "never"])
            code = 0
        except SystemExit as done:  # the CLI exits with the command's code
            code = done.code if isinstance(done.code, int) else 1
    cpu = time.process_time() - start
    settled = re.search(r"settled after (\d+) pass", out.getvalue())
    print(json.dumps({"cpu": round(cpu, 2), "exit": code, "passes": int(settled.group(1)) if settled else 0}))


def report(small: Figure, large: Figure) -> str:
    """The figures beside their targets."""
    lines = [f"  {'clusters':>8} {'replicas':>8} {'services':>8} | {'CPU s':>7} {'target':>18} | exit passes"]
    for f in (small, large):
        target = ""
        if (f.clusters, f.replicas, f.services) == LARGE:
            target = f"<= {TARGET_SECONDS:g} s {'meets' if f.cpu_seconds <= TARGET_SECONDS else 'MISSES'}"
        lines.append(
            f"  {f.clusters:>8} {f.replicas:>8} {f.services:>8} | {f.cpu_seconds:>7.1f} {target:>18} |"
            f" {f.exit_code:>4} {f.passes:>6}"
        )
    growth = large.cpu_seconds / small.cpu_seconds if small.cpu_seconds else float("inf")
    verdict = "meets" if growth <= TARGET_GROWTH else "MISSES"
    lines.append(f"  growth x{growth:.2f} for x4 the fleet (target <= x{TARGET_GROWTH:g}, {verdict})")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``python -m bench.preview``: the preview rows alone, as ``make bench`` prints them (a directory: one child)."""
    if argv:
        _child(argv[0])
        return 0
    print(report(measure(*SMALL), measure(*LARGE)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
