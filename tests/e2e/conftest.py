"""The e2e session: one control plane for every scenario, stopped by PID at the end (also on failure).

The figures (tool build, bring-up, apply→Scheduled/objects/Ready, each
module's time, the slowest waits) and what the run stands in for are printed in
the terminal summary, with the directory of every process's log when something
failed; the summary line ends with the run's wall time beside its budget (a
figure, not an assertion).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import plane as planes
from tests.e2e import tools as e2e_tools
from tests.e2e.figures import BUDGET_SECONDS, FIGURES, NOTES, WAITS, minutes
from tests.e2e.hardware import Hardware
from tests.e2e.plane import Plane
from tests.e2e.procs import exclusive
from tests.e2e.standin import STAND_INS, StandIn

_STATE: dict[str, object] = {}
# Seconds each test module took (setup, call and teardown of its tests, its module fixtures included).
_MODULES: defaultdict[str, float] = defaultdict(float)
# How many of the slowest waits the summary lists.
SLOWEST_WAITS = 15
# Long enough for another run of the tier on the same machine to finish (a whole run takes
# up to ~25 min on a loaded 2-core machine).
RUN_LOCK_TIMEOUT = 2400.0
# Set (to anything) to keep every process's logs after a passing run too, to read the timing of a wait.
KEEP_LOGS = "MODELPLANE_E2E_KEEP_LOGS"
# Set to record when each Object, ModelReplica, ModelDeployment, InferenceCluster and workload changed
# (tests/e2e/timeline.py): the log directory's timeline.log.
TIMELINE = "MODELPLANE_E2E_TIMELINE"


@pytest.fixture(scope="session")
def plane() -> Iterator[Plane]:
    """The running control plane, its workload API servers and the workload stand-in."""
    tools = e2e_tools.install()
    # provider-kubernetes v1.2.1 binds :8080 and :9443 and has no flag to move them: one run at a time.
    with exclusive(tools.kubectl.parents[1] / ".e2e-run.lock", timeout=RUN_LOCK_TIMEOUT):
        yield from _plane(tools)


def _plane(tools: e2e_tools.Tools) -> Iterator[Plane]:
    work = Path(tempfile.mkdtemp(prefix="modelplane-e2e-"))
    _STATE["work"] = work
    for name, seconds in sorted(tools.build_seconds().items()):
        FIGURES[f"cold build of {name} (s, when it was built)"] = float(seconds)
    up = planes.start(work, tools)
    for what, why in STAND_INS.items():
        up.note(f"stand-in: {what}: {why}")
    NOTES.extend(up.notes)
    FIGURES.update(up.figures)
    servers = {up.control.name: up.kube, **{n: s.kube for n, s in up.workloads.items()}}
    standin = StandIn(servers, control_plane=up.control.name)
    # The InferenceGateway installs Envoy Gateway on the control plane through this ProviderConfig.
    standin.target("in-cluster", up.control.name)
    standin.start()
    up.standin = standin
    hardware = Hardware(up.kube, {n: s.kube for n, s in up.workloads.items()})
    hardware.start()
    up.hardware = hardware
    if os.environ.get(TIMELINE):
        planes.start_timeline(up)
    _STATE["hardware"] = hardware
    try:
        yield up
    finally:
        hardware.stop()
        standin.stop()
        up.sup.stop()
        up.cleanup()


def pytest_sessionstart() -> None:
    """When the run began: its wall time is printed beside the budget."""
    _STATE["began"] = time.monotonic()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remember a failure (the summary then points at the logs, and the work directory is kept); time each module."""
    if report.failed:
        _STATE["failed"] = True
    _MODULES[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures, the substitutions, and where the logs are when something failed."""
    work = _STATE.get("work")
    if work is None:
        return
    tr = terminalreporter
    tr.section("modelplane e2e")
    began = _STATE.get("began")
    wall = time.monotonic() - began if isinstance(began, float) else 0.0
    timing = f"in {minutes(wall)} (budget {BUDGET_SECONDS // 60}m)"
    hardware = _STATE.get("hardware")
    if isinstance(hardware, Hardware):
        counts = hardware.counts
        tr.write_line(
            f"e2e: pods scheduled by kube-scheduler {len(counts.pods)}, ResourceClaims allocated "
            f"{len(counts.claims)}, nodes {len(counts.nodes)}, stand-ins: {', '.join(STAND_INS)} {timing}"
        )
    else:
        tr.write_line(f"e2e: {timing}")
    for line in NOTES:
        tr.write_line(f"note: {line}")
    for name, value in FIGURES.items():
        tr.write_line(f"figure: {name}: {value}")
    for module, seconds in sorted(_MODULES.items()):
        tr.write_line(f"figure: module {module} (s): {seconds:.1f}")
    for seconds, what in sorted(WAITS, reverse=True)[:SLOWEST_WAITS]:
        tr.write_line(f"figure: wait (s): {seconds:.1f} for {what}")
    assert isinstance(work, Path)
    if _STATE.get("failed") or os.environ.get(KEEP_LOGS):
        tr.write_line(f"logs of every process: {work / 'logs'}")
    else:
        shutil.rmtree(work, ignore_errors=True)
