"""A run's status from what its cluster reports, and from what it said before once that is gone.

A one-shot run's phase, times, counts and output follow its Job and the result contract of its pod
(``modelplane.batch.runs``). A finished Job may be deleted (``spec.ttlAfterFinished``, or by hand):
the run then keeps the status it last wrote, which is why this function reads its own status. A
scheduled run lists its Jobs in ``runs`` and takes its counts, times and output from the newest
finished one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.batch.contract import Report
from modelplane.batch.runs import Phase, RunState, cron_runs, job_of, job_run
from modelplane.batch.work import BatchWork
from modelplane.layout import Layout

# What is read of the run's own status.
OWN: Layout = {
    "status": {
        "phase": str,
        "cluster": str,
        "pool": str,
        "requestCounts": {"total": int, "completed": int, "failed": int},
        "startedAt": str,
        "finishedAt": str,
        "output": {"results": str, "errors": str},
        "lastScheduleTime": str,
        "runs": [object],
    }
}
_CARRIED = ("requestCounts", "startedAt", "finishedAt", "output", "lastScheduleTime", "runs")


@dataclass(frozen=True)
class Observed:
    """A run as this call sees it: its phase, why, and its status."""

    phase: Phase
    message: str
    status: dict[str, Any]


def _output(work: BatchWork, phase: Phase, report: Report | None) -> dict[str, str]:
    """Where the files are: as the worker reported; for a Succeeded run that did not say, the spec's."""
    out: dict[str, str] = {}
    if report is not None and report.results:
        out["results"] = report.results
        if report.errors:
            out["errors"] = report.errors
    elif phase is Phase.SUCCEEDED:
        out["results"] = work.output.uri
        if work.errors is not None:
            out["errors"] = work.errors.uri
    return out


def _of_run(work: BatchWork, run: RunState) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if run.started:
        out["startedAt"] = run.started
    if run.finished:
        out["finishedAt"] = run.finished
    if run.report is not None:
        out["requestCounts"] = run.report.counts.status()
    output = _output(work, run.phase, run.report)
    if output:
        out["output"] = output
    return out


def one_shot(
    work: BatchWork, job: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]], own: Mapping[str, Any]
) -> Observed:
    """A one-shot run: its Job as observed (None: not observed, or gone), its pods, and its own last status."""
    if job is None:
        phase = Phase(own["phase"]) if own.get("phase") in set(Phase) else Phase.SCHEDULED
        if phase.finished:
            # The Job is gone (ttlAfterFinished, or deleted by hand): what it reported stays.
            return Observed(phase, f"the run {str(phase).lower()}; its Job is gone", _carried(own, phase))
        return Observed(Phase.SCHEDULED, "creating the Job", {"phase": str(Phase.SCHEDULED)})
    run = job_run(job, pods)
    status: dict[str, Any] = {"phase": str(run.phase), **_of_run(work, run)}
    if run.phase.finished and run.report is None:
        # Its pods are gone before the report was read: keep the counts said before, if any.
        for key in ("requestCounts",):
            if key in own and key not in status:
                status[key] = own[key]
    return Observed(run.phase, run.message, status)


def scheduled(
    work: BatchWork,
    cron_job: Mapping[str, Any] | None,
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
) -> Observed:
    """A scheduled run: its CronJob as observed (None: not yet), its Jobs and their pods."""
    names = {str((j.get("metadata") or {}).get("name", "")) for j in jobs}
    found = cron_runs(cron_job, jobs, [p for p in pods if job_of(p) in names])
    phase = Phase.RUNNING if found.active else Phase.SCHEDULED
    status: dict[str, Any] = {"phase": str(phase)}
    if found.latest is not None:
        status.update(_of_run(work, found.latest))
    if found.last_schedule:
        status["lastScheduleTime"] = found.last_schedule
    if found.runs:
        status["runs"] = [r.status() for r in found.runs]
    return Observed(phase, found.message, status)


def _carried(own: Mapping[str, Any], phase: Phase) -> dict[str, Any]:
    return {"phase": str(phase), **{k: own[k] for k in _CARRIED if k in own}}


def kept(own: Mapping[str, Any]) -> dict[str, Any]:
    """The status said before, for a call that decides nothing (Pending when none was said)."""
    phase = Phase(own["phase"]) if own.get("phase") in set(Phase) else Phase.PENDING
    return _carried(own, phase)
