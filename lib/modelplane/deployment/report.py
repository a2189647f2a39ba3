"""Say what a ModelDeployment's schedule kept, held back or could not place: the Scheduled condition and results.

Nothing is held silently: a replica kept with its observed spec because an input
is gone or unreadable, or because the changed spec cannot run where it runs, a
replica whose placement no longer matches the spec, and a composed replica that
cannot be read each make ``Scheduled`` False and raise a warning naming the
input or field. The reason leads with the cause rather than its consequence: a
change held back, then inputs that are gone or unreadable (a replacement that
cannot be placed follows from them), then composed replicas that cannot be
read, then replicas without a placement, then stale placements. What a rollout
or a drain does on its way (replicas of an older revision waiting for their wave,
replicas leaving a cluster that drains or is being deleted, a surge waiting for
GPUs the rollout itself releases) is progress: ``Progressing`` reports it and ``Scheduled`` stays True
while the replicas asked for are placed or serving.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.names import replica_key
from modelplane.scheduling import Held, HoldReason, RejectReason, Schedule


@dataclass(frozen=True)
class Report:
    """The Scheduled condition, the warnings to raise and the normal results (events) to record."""

    condition: Condition
    warnings: tuple[str, ...]
    normal: tuple[str, ...]


@dataclass(frozen=True)
class _Part:
    reason: Reason
    warning: str
    detail: str  # what the condition's message adds to the schedule's own ("" when it already says it)


def report(plan: Schedule, unreadable: Mapping[int, str]) -> Report:
    """Report ``plan`` and the composed replicas that could not be read (``unreadable``: ordinal to why)."""
    # A replica of an older revision waiting for its wave is the rollout's business (Progressing), not a problem.
    # So is a replica leaving a cluster that drains or is being deleted, or a pool being removed (the user's act):
    # Scheduled says how many, Progressing how it goes, and an event why.
    quiet = (
        HoldReason.OUTDATED,
        HoldReason.CLUSTER_DRAINING,
        HoldReason.CLUSTER_DELETING,
        HoldReason.POOL_REMOVING,
        HoldReason.PREEMPTED,
    )
    holds = [(p.replica, p.held) for p in plan.placements if p.held is not None and p.held.reason not in quiet]
    parts = _held((r, h) for r, h in holds if not (h.reason.input_missing or h.lost))
    parts += _held((r, h) for r, h in holds if h.reason.input_missing or h.lost)
    for ordinal, why in sorted(unreadable.items()):
        text = f"{replica_key(ordinal)} is kept as it is: its observed ModelReplica cannot be read ({why})"
        parts.append(_Part(Reason.REPLICA_UNREADABLE, text, text))
    if plan.unplaced:
        reason = condition_reason(plan.unplaced[0].reason)
        parts.append(_Part(reason, f"not every replica could be scheduled: {plan.message}", ""))
    if plan.waiting:
        text = (
            f"scaling down to {plan.desired} waits until every replica's inputs can be read"
            " and every replica says whether it is Ready"
        )
        parts.append(_Part(parts[0].reason if parts else Reason.REPLICA_UNREADABLE, text, text))
    for p in plan.placements:
        if p.stale:
            text = f"{p.replica} on InferenceCluster {p.cluster} no longer matches the spec: {p.stale}"
            parts.append(_Part(Reason.STALE_PLACEMENT, text, text))
    old = set(plan.rollout.retired_old) if plan.rollout is not None else set()
    drained = set(plan.rollout.retired_draining) if plan.rollout is not None else set()
    unpooled = set(plan.rollout.retired_pool_removed) if plan.rollout is not None else set()
    normal = tuple(
        f"retired {name}: "
        + (
            "it ran an older revision"
            if name in old
            else "its InferenceCluster drains"
            if name in drained
            else "its pool is being removed from its InferenceCluster"
            if name in unpooled
            else "its InferenceCluster is being deleted"
        )
        + " and enough replicas are Ready without it"
        for name in plan.retired
        if name not in plan.preempted
    )
    normal += tuple(
        f"moved {replica} from InferenceCluster {source} to {target}: {source} found it placed concurrently"
        " beyond its capacity, and it was not serving yet"
        for replica, source, target in plan.moved
        if source != target
    )
    normal += tuple(
        f"placed {p.replica} on InferenceCluster {p.cluster} in the place of replicas of a lower priority"
        " not serving yet: nothing else had room, and their deployments move them"
        for p in plan.placements
        if p.preempts
    )
    normal += tuple(
        f"placed {p.replica} on InferenceCluster {p.cluster} in the place of serving replicas of a lower priority"
        " whose FleetQuota allows preemption LowerPriority: nothing else had room; their deployments move them"
        f" surge-first and {p.replica} waits for their GPUs"
        for p in plan.placements
        if p.preempts_serving
    )
    normal += tuple(
        f"retired {name}: it gives way to replicas of a higher priority (preemption LowerPriority),"
        " within the rollout's maxSurge and maxUnavailable"
        for name in plan.preempted
    )
    waits = plan.rollout.pending if plan.rollout is not None else plan.pending
    normal += tuple(
        f"{w.replica} waits on InferenceCluster {w.cluster} for serving replicas of a lower priority to give way:"
        f" {', '.join(w.releasing)}"
        for w in waits
        if w.preempted
    )
    leaving = sorted({h.message for p in plan.placements if (h := p.held) and h.leaving})
    if leaving:
        normal += (f"moving elsewhere a wave at a time: {', '.join(plan.leaving)} ({'; '.join(leaving)})",)
    if not parts:
        if plan.desired == 0:
            return Report(Condition(Type.SCHEDULED, Status.TRUE, Reason.SCALED_TO_ZERO, SCALED_TO_ZERO), (), normal)
        return Report(Condition(Type.SCHEDULED, Status.TRUE, Reason.SCHEDULED, plan.message), (), normal)
    message = "; ".join([plan.message, *(p.detail for p in parts if p.detail)])
    condition = Condition(Type.SCHEDULED, Status.FALSE, parts[0].reason, message)
    return Report(condition, tuple(p.warning for p in parts), normal)


SCALED_TO_ZERO = (
    "scaled to zero: spec.replicas is 0; no replica serves and the ModelServices routing to this deployment "
    "answer 503 until spec.replicas is raised (kubectl scale, or an autoscaler through the scale subresource)"
)


def _held(holds: Iterable[tuple[str, Held]]) -> list[_Part]:
    """One part per way replicas are held, naming them."""
    groups: dict[Held, list[str]] = defaultdict(list)
    for replica, held in holds:
        groups[held].append(replica)
    parts = []
    for held, names in groups.items():
        who = ", ".join(names)
        if held.lost:
            text = f"{who} kept as running while replacements run elsewhere: {held.message}"
        elif held.reason.input_missing:
            text = f"{who} kept as running, unchanged: {held.message}"
        else:
            text = f"{who} kept at the previous shape, the change held back: {held.message}"
        parts.append(_Part(condition_reason(held.reason), text, text))
    return parts


def condition_reason(reason: HoldReason | RejectReason) -> Reason:
    """The Scheduled condition's reason for why a replica is held or has no placement.

    The scheduler's reasons are named as the condition's (``modelplane.conditions.Reason``
    lists them): this is the one place that turns one into the other.
    """
    return Reason(reason.value)
