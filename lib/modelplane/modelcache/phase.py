"""A copy's phase on one cluster, from what the workload cluster reports of it.

Storage type PVC reads the hydration Job (its Complete and Failed conditions, as the Job
controller writes them; a Job failed by its podFailurePolicy has had its Secret check fail);
NodeLocal reads the LocalModelCache's ``status.copies`` (KServe counts the nodes whose copy is
downloaded, and those that failed). Nothing observed yet is Pending.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from modelplane.conditions import Reason

# The Failed condition's reason when a podFailurePolicy rule failed the Job (k8s.io/api batch/v1
# JobReasonPodFailurePolicy). The hydration Job's only rule is its check-secret container's exit 3.
_POD_FAILURE_POLICY = "PodFailurePolicy"


class Phase(StrEnum):
    """Where a copy is (``status.clusters[].phase``)."""

    PENDING = "Pending"
    HYDRATING = "Hydrating"
    READY = "Ready"
    FAILED = "Failed"


@dataclass(frozen=True)
class CopyState:
    """A copy's phase, why, since when ("" when the cluster does not say), and a reason to report it by.

    ``reason`` is set when the copy cannot get further without the user (None otherwise): the
    Deployed condition says it.
    """

    phase: Phase
    message: str
    since: str = ""
    reason: Reason | None = None


def _condition(status: Mapping[str, Any], typ: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == typ and condition.get("status") == "True":
            return condition
    return None


def job_state(job: Mapping[str, Any] | None, name: str, missing_secret: str = "") -> CopyState:
    """The phase of a copy filled by the hydration Job ``name`` (``job``: as observed, None when not yet).

    Args:
        job: The Job as the workload cluster reports it (``status.atProvider.manifest``), or None.
        name: The Job's name, for the messages.
        missing_secret: What a failed Secret check means, naming the field (e.g.
            ``spec.source.s3.secretRef: Secret aws ... not found ...``); "" when the Job checks no Secret.
    """
    if job is None:
        return CopyState(Phase.PENDING, f"creating the claim and the hydration Job {name}")
    status = job.get("status") or {}
    complete = _condition(status, "Complete")
    if complete is not None:
        since = str(status.get("completionTime") or complete.get("lastTransitionTime") or "")
        return CopyState(Phase.READY, f"hydration Job {name} completed", since)
    failed = _condition(status, "Failed")
    if failed is not None and missing_secret and failed.get("reason") == _POD_FAILURE_POLICY:
        message = f"{missing_secret}; hydration Job {name} stopped before downloading; the claim keeps what it holds"
        return CopyState(Phase.FAILED, message, str(failed.get("lastTransitionTime") or ""), Reason.SECRET_NOT_FOUND)
    if failed is not None:
        why = ": ".join(str(failed[k]) for k in ("reason", "message") if failed.get(k))
        message = f"hydration Job {name} failed{': ' + why if why else ''}; the claim keeps what it holds"
        return CopyState(Phase.FAILED, message, str(failed.get("lastTransitionTime") or ""))
    active = status.get("active") or 0
    retries = status.get("failed") or 0
    message = f"hydration Job {name} is downloading" if active else f"hydration Job {name} is starting"
    if retries:
        message += f" ({retries} failed attempt(s))"
    return CopyState(Phase.HYDRATING, message, str(status.get("startTime") or ""))


def node_local_state(cache: Mapping[str, Any] | None, name: str) -> CopyState:
    """The phase of KServe's node-local copies of LocalModelCache ``name`` (``cache``: as observed, or None)."""
    if cache is None:
        return CopyState(Phase.PENDING, f"creating LocalModelCache {name}")
    copies = (cache.get("status") or {}).get("copies") or {}
    total, available, failed = (int(copies.get(k) or 0) for k in ("total", "available", "failed"))
    if failed:
        return CopyState(Phase.FAILED, f"LocalModelCache {name}: {failed} of {total} node copies failed")
    if total and available == total:
        return CopyState(Phase.READY, f"LocalModelCache {name}: {available} of {total} node copies downloaded")
    if not total:
        return CopyState(Phase.HYDRATING, f"LocalModelCache {name}: waiting for KServe to list the nodes")
    return CopyState(Phase.HYDRATING, f"LocalModelCache {name}: {available} of {total} node copies downloaded")
