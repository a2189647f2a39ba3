"""Time at the edge: which clusters are lost and for how long, the Progressing and Failover conditions, the TTL.

Time enters a call in two ways only: the ``lastTransitionTime`` of conditions in
the request (a lost cluster's own Ready condition; this deployment's Failover
and Progressing conditions, which Crossplane stamps whenever their status,
reason or message changes) and ``now``, read once by the function and passed in
(tests pass a fixed one). Everything here is a function of those: the same
request and ``now`` give the same answer. The response's TTL asks Crossplane to
call again when the next deadline (a failover grace, a progress deadline) falls
due, so nothing waits for an unrelated event.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.scheduling import Pending, Rollout, Strategy

TTL_CEILING = 60.0
"""Never ask to be called later than the SDK's default TTL."""


@dataclass(frozen=True)
class ObservedCondition:
    """A condition of the XR as observed: its reason, message and when it last changed (None when unknown)."""

    status: str
    reason: str
    message: str
    since: datetime | None


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time (``2025-01-01T00:00:00Z``); None when it does not parse."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def lost_clusters(
    hosting: Collection[str],
    present: Mapping[str, bool],
    excluded: Collection[str],
    not_ready_since: Mapping[str, str],
    failover: ObservedCondition | None,
    now: datetime,
) -> dict[str, tuple[float, str]]:
    """The clusters hosting replicas that are lost, each with for how many seconds and why.

    Args:
        hosting: Clusters that run this deployment's replicas.
        present: Clusters in the fleet, by name, with whether each is Ready.
        excluded: Clusters that are neither lost nor present: being deleted, or unreadable.
        not_ready_since: When each not-Ready cluster's Ready condition last changed.
        failover: The deployment's observed Failover condition: when it turned to
            ClusterLost is when an absent cluster (which has no condition of its own) was lost.
        now: The time of this call.
    """
    lost_since = failover.since if failover is not None and failover.reason == Reason.CLUSTER_LOST else None
    out: dict[str, tuple[float, str]] = {}
    for name in sorted(hosting):
        if name in excluded or present.get(name, False):
            continue
        if name in present:
            since, why = parse_time(not_ready_since.get(name, "")) or lost_since, "has not been Ready"
        else:
            since, why = lost_since, "has not been in the fleet"
        out[name] = (max(0.0, (now - since).total_seconds()) if since is not None else 0.0, why)
    return out


def failover_condition(lost: Mapping[str, tuple[float, str]], strategy: Strategy) -> Condition:
    """Failover: False while every hosting cluster is Ready; True, naming the lost ones (a stable message)."""
    if not lost:
        return Condition(
            Type.FAILOVER, Status.FALSE, Reason.CLUSTERS_READY, "every InferenceCluster running a replica is Ready"
        )
    names = "; ".join(f"InferenceCluster {name} {why}" for name, (_, why) in lost.items())
    if strategy.failover_after is None:
        then = "failover is disabled (spec.failover.after: 0): its replicas are kept and not replaced"
    else:
        after = int(strategy.failover_after)
        then = f"its replicas are replaced elsewhere once it has been lost for {after}s, and kept until it returns"
    return Condition(Type.FAILOVER, Status.TRUE, Reason.CLUSTER_LOST, f"{names}: {then}")


def progressing_condition(
    rollout: Rollout,
    desired: int,
    ready: Collection[str],
    observed: ObservedCondition | None,
    strategy: Strategy,
    now: datetime,
) -> Condition:
    """Progressing, as a Deployment's: in progress while replicas move; stalled after the deadline without progress."""
    if rollout.paused and (rollout.outdated or rollout.waiting):
        message = f"revision {rollout.revision}: paused with {rollout.updated} of {desired} replicas updated"
        return Condition(Type.PROGRESSING, Status.UNKNOWN, Reason.ROLLOUT_PAUSED, message)
    updated_ready = rollout.updated - len(rollout.waiting)
    head = f"revision {rollout.revision}: {rollout.updated} of {desired} replicas updated, {updated_ready} Ready"
    if rollout.complete:
        return Condition(Type.PROGRESSING, Status.TRUE, Reason.ROLLOUT_COMPLETE, head)
    parts = [head]
    if rollout.outdated:
        parts.append(f"{len(rollout.outdated)} of an older revision")
    if rollout.leaving:
        parts.append(f"{len(rollout.leaving)} leaving ({', '.join(rollout.leaving)})")
    if rollout.blocked:
        parts.append(f"{', '.join(rollout.leaving)} cannot move: {rollout.blocked}")
    parts += [_waiting(pending) for pending in rollout.pending]
    if rollout.fallback:
        parts.append(rollout.fallback)
    progress = "; ".join(parts)
    slow = next((w for w in rollout.waiting if w not in ready), "")
    if slow:
        who = f"{slow} has not become Ready"
    elif rollout.blocked:
        who = f"{', '.join(rollout.leaving)} could not move"
    else:
        who = "no replica could be placed or retired"
    stalled = f"{progress}; {who} within {strategy.deadline}s (spec.progressDeadlineSeconds)"
    if observed is not None and observed.reason == Reason.ROLLOUT_STALLED and observed.message == stalled:
        return Condition(Type.PROGRESSING, Status.FALSE, Reason.ROLLOUT_STALLED, stalled)
    if (
        observed is not None
        and observed.reason == Reason.ROLLOUT_IN_PROGRESS
        and observed.message == progress
        and observed.since is not None
        and (now - observed.since).total_seconds() >= strategy.deadline
    ):
        return Condition(Type.PROGRESSING, Status.FALSE, Reason.ROLLOUT_STALLED, stalled)
    return Condition(Type.PROGRESSING, Status.TRUE, Reason.ROLLOUT_IN_PROGRESS, progress)


def _waiting(pending: Pending) -> str:
    """What a pending replica waits for: GPUs its own deployment releases, or lower priorities that give way."""
    if pending.preempted:
        return (
            f"{pending.replica} is waiting on InferenceCluster {pending.cluster} for serving replicas of a lower"
            f" priority to give way: {', '.join(pending.releasing)}"
        )
    return f"{pending.replica} is waiting for {_owned(pending.releasing)} GPUs to be released"


def _owned(names: Sequence[str]) -> str:
    """``llm-0's``, ``llm-0's and llm-2's``."""
    owned = [f"{n}'s" for n in names]
    return owned[0] if len(owned) == 1 else f"{', '.join(owned[:-1])} and {owned[-1]}"


def next_call(
    lost: Mapping[str, tuple[float, str]],
    strategy: Strategy,
    progressing: Condition,
    observed: ObservedCondition | None,
    now: datetime,
) -> float | None:
    """Seconds until a deadline of this call falls due (at most ``TTL_CEILING``); None when none is pending."""
    due: list[float] = []
    if strategy.failover_after is not None:
        due += [strategy.failover_after - seconds for seconds, _ in lost.values() if seconds < strategy.failover_after]
    if progressing.reason == Reason.ROLLOUT_IN_PROGRESS:
        same = observed is not None and observed.message == progressing.message and observed.since is not None
        elapsed = (now - observed.since).total_seconds() if same and observed and observed.since else 0.0
        due.append(strategy.deadline - elapsed)
    if not due:
        return None
    return float(min(TTL_CEILING, max(1, math.ceil(min(due)))))


def observed_conditions(conditions: Sequence[Mapping[str, object]]) -> dict[str, ObservedCondition]:
    """The XR's observed conditions by type (entries that are not objects with a string type are skipped)."""
    out: dict[str, ObservedCondition] = {}
    for c in conditions:
        kind = c.get("type")
        if not isinstance(kind, str) or kind in out:
            continue
        text = c.get("lastTransitionTime")
        out[kind] = ObservedCondition(
            str(c.get("status", "")),
            str(c.get("reason", "")),
            str(c.get("message", "")),
            parse_time(text) if isinstance(text, str) else None,
        )
    return out
