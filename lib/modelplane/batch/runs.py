"""A run's phase, times and counts, from its Job (or its CronJob's Jobs) and their pods as its cluster reports them.

A Job's phase: Succeeded once its Complete condition is True; Expired when it Failed with reason
DeadlineExceeded (``spec.deadline``); Failed on any other Failed condition; Scheduled while it is
suspended (Kueue has not admitted it) or its pod waits to start; Running once a pod runs. Its counts
come from the result contract (``modelplane.batch.contract``) in the termination message of the
reporting container of its newest pod that ended. A scheduled run (a CronJob) is Running while one
of its Jobs runs and Scheduled otherwise; each of its Jobs is a run of ``status.runs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from modelplane.batch.contract import Report, read_report
from modelplane.names import BATCH_REPORTER_ANNOTATION

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
_LEGACY_JOB_NAME_LABEL = "job-name"
_DEADLINE = "DeadlineExceeded"


class Phase(StrEnum):
    """Where a run is (``status.phase``)."""

    PENDING = "Pending"
    SCHEDULED = "Scheduled"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    EXPIRED = "Expired"

    @property
    def finished(self) -> bool:
        """Whether the run has ended."""
        return self in (Phase.SUCCEEDED, Phase.FAILED, Phase.EXPIRED)


@dataclass(frozen=True)
class RunState:
    """One run (one Job) as observed.

    Attributes:
        job: The Job's name on the workload cluster.
        phase: Where it is.
        message: Why, for the conditions (the Job's or its pod's own words).
        started: When it started ("" when it did not say).
        finished: When it ended ("" while it runs).
        report: What its worker reported (None: nothing yet).
    """

    job: str
    phase: Phase
    message: str = ""
    started: str = ""
    finished: str = ""
    report: Report | None = None

    def status(self) -> dict[str, Any]:
        """As an entry of ``status.runs``."""
        out: dict[str, Any] = {"job": self.job, "phase": str(self.phase)}
        if self.started:
            out["startedAt"] = self.started
        if self.finished:
            out["finishedAt"] = self.finished
        if self.report is not None:
            out["requestCounts"] = self.report.counts.status()
        return out


def _condition(status: Mapping[str, Any], typ: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == typ and condition.get("status") == "True":
            return condition
    return None


def job_of(pod: Mapping[str, Any]) -> str:
    """The Job a pod belongs to ("" for none)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return str(labels.get(JOB_NAME_LABEL) or labels.get(_LEGACY_JOB_NAME_LABEL) or "")


def _terminated(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The reporting container's last termination, when it has one."""
    reporter = ((pod.get("metadata") or {}).get("annotations") or {}).get(BATCH_REPORTER_ANNOTATION)
    statuses = [s for s in (pod.get("status") or {}).get("containerStatuses") or [] if isinstance(s, Mapping)]
    chosen = next((s for s in statuses if s.get("name") == reporter), statuses[0] if statuses else None)
    if chosen is None:
        return None
    for where in ("state", "lastState"):
        terminated = (chosen.get(where) or {}).get("terminated")
        if isinstance(terminated, Mapping):
            return terminated
    return None


def _newest(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    def key(pod: Mapping[str, Any]) -> tuple[str, str]:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        return (str(status.get("startTime") or meta.get("creationTimestamp") or ""), str(meta.get("name", "")))

    return sorted(pods, key=key, reverse=True)


def reported(pods: Iterable[Mapping[str, Any]]) -> Report | None:
    """The report of the newest pod whose reporting container ended with one."""
    for pod in _newest(pods):
        terminated = _terminated(pod)
        report = read_report(str(terminated.get("message") or "")) if terminated is not None else None
        if report is not None:
            return report
    return None


def _waiting(pods: list[Mapping[str, Any]]) -> str:
    """Why the newest pod has not started ("" when it has, or none is observed)."""
    for pod in _newest(pods)[:1]:
        status = pod.get("status") or {}
        if status.get("phase") not in (None, "Pending"):
            return ""
        for condition in status.get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                name = (pod.get("metadata") or {}).get("name", "")
                return f"pod {name}: {condition.get('reason', '')}: {condition.get('message', '')}".rstrip(": ")
        for container in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
            waiting = (container.get("state") or {}).get("waiting")
            if isinstance(waiting, Mapping) and waiting.get("reason"):
                return f"container {container.get('name', '')}: {waiting['reason']}"
        return "its pod is starting"
    return ""


def job_run(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> RunState:
    """One Job as observed (``job``: the Job as the workload cluster reports it) with its pods."""
    name = str((job.get("metadata") or {}).get("name", ""))
    mine = [p for p in pods if job_of(p) in (name, "")]
    status = job.get("status") or {}
    started = str(status.get("startTime") or "")
    report = reported(mine)
    complete = _condition(status, "Complete")
    if complete is not None:
        finished = str(status.get("completionTime") or complete.get("lastTransitionTime") or "")
        return RunState(name, Phase.SUCCEEDED, f"Job {name} completed", started, finished, report)
    failed = _condition(status, "Failed")
    if failed is not None:
        finished = str(failed.get("lastTransitionTime") or "")
        why = ": ".join(str(failed[k]) for k in ("reason", "message") if failed.get(k))
        phase = Phase.EXPIRED if failed.get("reason") == _DEADLINE else Phase.FAILED
        return RunState(name, phase, f"Job {name} failed{': ' + why if why else ''}", started, finished, report)
    suspended = _condition(status, "Suspended")
    if suspended is not None or job.get("spec", {}).get("suspend") is True:
        return RunState(name, Phase.SCHEDULED, f"Job {name} is suspended: waiting for its queue to admit it", started)
    waiting = _waiting(mine)
    retries = int(status.get("failed") or 0)
    tried = f" ({retries} failed attempt(s))" if retries else ""
    if int(status.get("ready") or 0) > 0 or any((p.get("status") or {}).get("phase") == "Running" for p in mine):
        return RunState(name, Phase.RUNNING, f"Job {name} is running{tried}", started, report=report)
    message = f"Job {name} waits to start{tried}" + (f": {waiting}" if waiting else "")
    return RunState(name, Phase.SCHEDULED, message, started, report=report)


@dataclass(frozen=True)
class Schedule:
    """A scheduled run's Jobs as observed: newest first, and when its CronJob last started one."""

    runs: tuple[RunState, ...] = ()
    last_schedule: str = ""
    active: bool = False
    message: str = ""
    latest: RunState | None = field(default=None)  # the newest finished run


def cron_runs(
    cron_job: Mapping[str, Any] | None, jobs: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> Schedule:
    """A CronJob's runs (``jobs``: its Jobs as observed, ``pods``: theirs)."""
    pods = list(pods)
    states = [
        job_run(j, [p for p in pods if job_of(p) == str((j.get("metadata") or {}).get("name", ""))]) for j in jobs
    ]
    states.sort(key=lambda s: (s.started or "~", s.job), reverse=True)  # not started yet: newest
    status = (cron_job or {}).get("status") or {}
    active = bool(status.get("active")) or any(s.phase is Phase.RUNNING for s in states)
    latest = next((s for s in states if s.phase.finished), None)
    last = str(status.get("lastScheduleTime") or "")
    if cron_job is None:
        message = "creating the CronJob"
    elif active:
        message = f"a run is active: {', '.join(s.job for s in states if not s.phase.finished) or 'starting'}"
    else:
        message = "waiting for the next scheduled run" + (f" (last started {last})" if last else "")
    return Schedule(tuple(states), last, active, message, latest)
