"""Lift a replica's status from what provider-kubernetes observed on its workload cluster.

The inputs are the remote objects as last observed (``status.atProvider.manifest``
of each Object) and the replica's pods (observed through its
ObservedObjectCollection). Workloads say whether the replica serves; pods say
why it does not yet: a container waiting on its image, a pod held until a
queue (Kueue) admits it, a pod the scheduler cannot place, a gang that is only
partly up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.conditions import Reason
from modelplane.layout import CONDITION, METADATA, Layout
from modelplane.names import ROLE_LABEL
from modelplane.readiness import readiness_of
from modelplane.schedulers.kueue import ADMISSION_GATE

Manifest = Mapping[str, Any]

# What lift_status reads of a remote object and of a pod; inputs are conformed to these where they are read.
REMOTE: Layout = {
    "kind": str,
    "metadata": METADATA,
    "spec": {"replicas": int},
    "status": {"readyReplicas": int, "conditions": [CONDITION]},
}
POD: Layout = {
    "kind": str,
    "metadata": METADATA,
    "spec": {"schedulingGates": [{"name": str}]},
    "status": {
        "containerStatuses": [{"name": str, "state": {"waiting": {"reason": str, "message": str}}}],
        "conditions": [CONDITION],
    },
}

# Container waiting reasons that will not clear by themselves: reported before scheduling problems.
_STUCK = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CrashLoopBackOff")
_WORKLOAD_KINDS = frozenset({"Deployment", "LeaderWorkerSet", "LLMInferenceService"})
# A pod held by a scheduling gate is waiting to be admitted, not failing: who holds it, by gate.
_GATE_HOLDERS = {ADMISSION_GATE: "Kueue"}


@dataclass(frozen=True)
class ObservedRemote:
    """One composed Object as observed.

    Attributes:
        key: Its composition key.
        manifest: The remote object as last observed, or None when it does not exist yet.
        error: Why provider-kubernetes could not apply it (its Synced condition's message), if so.
    """

    key: str
    manifest: Manifest | None
    error: str = ""


@dataclass(frozen=True)
class RemoteStatus:
    """The replica's remote state: whether everything was applied, and whether it serves (with why not)."""

    deployed: bool
    deployed_reason: str
    deployed_message: str
    ready: bool
    reason: str
    message: str


def _counts(obj: Manifest) -> tuple[int, int]:
    want = int(obj.get("spec", {}).get("replicas", 1))
    return int(obj.get("status", {}).get("readyReplicas") or 0), want


def _replicated(unit: str) -> Callable[[Manifest], tuple[bool, str]]:
    def judge(obj: Manifest) -> tuple[bool, str]:
        ready, want = _counts(obj)
        available = readiness_of(obj, "Available").true
        message = f"{obj.get('kind')} {obj.get('metadata', {}).get('name')}: {ready}/{want} {unit} ready"
        return available and ready >= want, message

    return judge


def _llm_inference_service(obj: Manifest) -> tuple[bool, str]:
    name = obj.get("metadata", {}).get("name")
    if readiness_of(obj).true:
        return True, f"LLMInferenceService {name} is Ready"
    conditions = obj.get("status", {}).get("conditions") or []
    failing = [c for c in conditions if c.get("status") != "True" and c.get("type") != "Ready"]
    first = (failing or [c for c in conditions if c.get("type") == "Ready"] or [{}])[0]
    detail = ": ".join(str(p) for p in (first.get("type"), first.get("reason"), first.get("message")) if p)
    return False, f"LLMInferenceService {name} is not Ready" + (f" ({detail})" if detail else "")


_JUDGES: dict[str, Callable[[Manifest], tuple[bool, str]]] = {
    "Deployment": _replicated("workers"),
    "LeaderWorkerSet": _replicated("workers (groups)"),
    "LLMInferenceService": _llm_inference_service,
}


def _pod_problem(pod: Manifest) -> tuple[int, str, str] | None:
    """The worst problem of one pod as (severity, reason, message); None when it is ready."""
    name = pod.get("metadata", {}).get("name", "?")
    status = pod.get("status", {})
    for c in status.get("containerStatuses") or []:
        waiting = (c.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in _STUCK:
            message = f"pod {name} container {c.get('name')}: {waiting.get('message') or waiting['reason']}"
            return 0, str(waiting["reason"]), message
    gates = sorted(str(g.get("name")) for g in pod.get("spec", {}).get("schedulingGates") or [] if g.get("name"))
    scheduled = readiness_of(pod, "PodScheduled")
    if scheduled.status == "False" and not gates:
        return 1, scheduled.reason or "Unschedulable", f"pod {name}: {scheduled.message}"
    # Held before scheduling (queued): it waits its turn, which a pod that cannot be placed never gets.
    if gates:
        holders = sorted({_GATE_HOLDERS[g] for g in gates if g in _GATE_HOLDERS})
        by = f"{' and '.join(holders)} to admit it" if holders else "its scheduling gates to be lifted"
        message = f"pod {name} is waiting for {by} (scheduling gates: {', '.join(gates)})"
        return 2, str(Reason.WAITING_FOR_ADMISSION), message
    if not readiness_of(pod).true:
        return 3, "Starting", f"pod {name} is not ready yet"
    return None


def _pods_summary(pods: Sequence[Manifest], role: str) -> tuple[str, str] | None:
    mine = [p for p in pods if p.get("metadata", {}).get("labels", {}).get(ROLE_LABEL) == role]
    if not mine:
        return None
    problems = sorted(
        (p for pod in sorted(mine, key=lambda x: str(x.get("metadata", {}).get("name"))) if (p := _pod_problem(pod))),
        key=lambda p: p[0],
    )
    ready = len(mine) - len(problems)
    if not problems:
        return None
    _, reason, message = problems[0]
    return reason, f"{ready}/{len(mine)} {role} pods ready; {message}"


def _role_of(key: str) -> str:
    return key.split("-", 1)[1] if "-" in key else "unified"


def lift_status(
    desired: Sequence[str], observed: Sequence[ObservedRemote], pods: Sequence[Manifest] = ()
) -> RemoteStatus:
    """Judge a replica from its observed remote objects and pods.

    Args:
        desired: The composition keys of every remote object the replica wants.
        observed: What provider-kubernetes observed of them (any order; missing ones are not there yet),
            each manifest conformed to ``REMOTE``.
        pods: The replica's pods as observed on the workload cluster, conformed to ``POD``.

    Returns:
        Deployed when every object exists on the cluster; ready when every workload reports it
        serves. Otherwise the reason and message of the first problem: an apply error, then a
        pod's (image pull, crash, unschedulable), then the workload's own.
    """
    by_key = {o.key: o for o in observed}
    errors = [f"{k}: {by_key[k].error}" for k in sorted(desired) if k in by_key and by_key[k].error]
    missing = [k for k in sorted(desired) if k not in by_key or by_key[k].manifest is None]
    if errors:
        deployed = (False, "ApplyFailed", "; ".join(errors))
    elif missing:
        deployed = (False, "Deploying", f"waiting for {len(missing)} object(s) on the cluster: {', '.join(missing)}")
    else:
        deployed = (True, "Deployed", f"{len(desired)} object(s) on the cluster")
    workloads = [
        (k, m)
        for k in sorted(desired)
        if (m := by_key[k].manifest if k in by_key else None) and m.get("kind") in _WORKLOAD_KINDS
    ]
    if not deployed[0] and not workloads:
        return RemoteStatus(*deployed, ready=False, reason=deployed[1], message=deployed[2])
    verdicts = [(k, *_JUDGES[str(m.get("kind"))](m)) for k, m in workloads]
    waiting = [(k, message) for k, ok, message in verdicts if not ok]
    if deployed[0] and not waiting:
        message = "; ".join(m for _, _, m in verdicts)
        return RemoteStatus(*deployed, ready=True, reason="Available", message=message)
    # A pod's own reason says most; else the workload's.
    for key, message in waiting or [("", deployed[2])]:
        roles = sorted({str(p.get("metadata", {}).get("labels", {}).get(ROLE_LABEL, "")) for p in pods})
        wanted = [_role_of(key)] if key and _role_of(key) in roles else roles
        for role in wanted:
            summary = _pods_summary(pods, role)
            if summary is not None:
                return RemoteStatus(*deployed, ready=False, reason=summary[0], message=f"{message}; {summary[1]}")
    reason = "Starting" if deployed[0] else deployed[1]
    return RemoteStatus(*deployed, ready=False, reason=reason, message="; ".join(m for _, m in waiting) or deployed[2])
