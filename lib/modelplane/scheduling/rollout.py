"""One wave of a rolling update or a drain: which replicas retire, which update in place, how many to add.

Replicas are *current* (they run the deployment's revision), *old* (an older
revision) or *leaving* (their cluster drains or is being deleted). The target
is ``replicas`` current replicas, none leaving, with Ready replicas never below
``replicas - max_unavailable`` by this wave's own doing. Each call, in order:

1. retire the surplus: while more replicas exist than ``replicas``, retire
   leaving then old ones, not-Ready ones first; a Ready one only while the Ready
   that remain stay at or above the bound;
2. update old replicas in place (one whose new shape runs where it is): a
   not-Ready one freely, a Ready one only within the same bound;
3. retire more leaving or old replicas that cannot be updated in place while
   the replicas left stay at or above ``replicas - max_unavailable`` (only with
   ``max_unavailable`` > 0: the path of ``maxSurge: 0``; leaving ones only with
   ``retire_leaving``, which the scheduler clears when their replacements fit
   nowhere: retiring one would free GPUs only on the cluster it leaves). A
   *preempted* leaving one (it gives way to a higher priority, which waits for
   its GPUs) is retired so whatever ``retire_leaving`` says, within
   ``replicas - max(max_unavailable, preempt_unavailable)``: the scheduler sets
   ``preempt_unavailable`` to 1 when ``max_unavailable`` is 0 and its replacement
   fits nowhere, so a preemption the quota allows is not blocked for ever (as
   Kubernetes' scheduler honours a PodDisruptionBudget only best-effort);
4. add current replicas, up to ``replicas + max_surge`` in all (surge).

With ``paused``, old replicas count as current and are left alone; leaving ones
still move. Lost replicas (their cluster is gone past the failover grace) are
not counted here at all: their replacements are added as if they were missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Member:
    """One existing replica in a wave.

    Attributes:
        ordinal: Its ordinal.
        ready: Whether it is Ready.
        leaving: Whether its cluster drains or is being deleted.
        in_place: For an old replica, whether the current shape can be applied where it runs.
        preempted: For a leaving replica, whether it gives way to a higher priority (step 3).
    """

    ordinal: int
    ready: bool
    leaving: bool = False
    in_place: bool = False
    preempted: bool = False


@dataclass(frozen=True)
class Wave:
    """What one call does: ordinals to retire and to update in place, and how many replicas to add."""

    retire: frozenset[int]
    in_place: frozenset[int]
    add: int


def wave(  # noqa: PLR0913 - the counts a Deployment's rolling update reads
    replicas: int,
    current: Sequence[Member],
    old: Sequence[Member],
    *,
    max_surge: int,
    max_unavailable: int,
    paused: bool = False,
    in_place_unavailable: int | None = None,
    retire_leaving: bool = True,
    opaque: int = 0,
    hold_retirement: bool = False,
    preempt_unavailable: int = 0,
) -> Wave:
    """Decide one wave (see the module's steps).

    Args:
        replicas: ``spec.replicas``.
        current: The replicas that run the current revision (leaving ones flagged).
        old: The replicas that run an older revision (leaving ones flagged).
        max_surge: Replicas that may exist beyond ``replicas``.
        max_unavailable: Ready replicas that may be missing below ``replicas``.
        paused: Leave old replicas alone.
        in_place_unavailable: The bound for in-place updates when it differs
            (the fallback to one at a time when no surge can be placed).
        retire_leaving: Whether step 3 may retire leaving replicas.
        opaque: Replicas that exist but cannot be read: each holds a slot (nothing replaces it)
            and none counts as Ready.
        hold_retirement: Retire nothing (steps 1 and 3): which replica may go would hang on a
            replica that cannot be read or does not say whether it is Ready.
        preempt_unavailable: The least bound for retiring preempted leaving replicas in step 3.

    Returns:
        The wave.
    """
    floor = replicas - max_unavailable
    preempt_floor = replicas - max(max_unavailable, preempt_unavailable)
    place_floor = replicas - (max_unavailable if in_place_unavailable is None else in_place_unavailable)
    members = [*current, *old]
    ready = sum(1 for m in members if m.ready)
    total = len(members) + opaque
    movable = [m for m in current if m.leaving] + [m for m in old if m.leaving or not paused]
    order = sorted(movable, key=lambda m: (m.ready, not m.leaving, m.ordinal))
    retire: set[int] = set()

    def take(member: Member, bound: int) -> bool:
        nonlocal ready, total
        if member.ready and ready - 1 < bound:
            return False
        retire.add(member.ordinal)
        ready -= member.ready
        total -= 1
        return True

    for m in () if hold_retirement else order:  # 1. the surplus
        if total <= replicas:
            break
        take(m, floor)
    staying_current = sum(1 for m in current if not m.leaving) + opaque
    in_place: set[int] = set()
    if not paused:  # 2. in place
        for m in sorted(old, key=lambda m: (m.ready, m.ordinal)):
            if m.ordinal in retire or m.leaving or not m.in_place or staying_current + len(in_place) >= replicas:
                continue
            if m.ready:
                if ready - 1 < place_floor:
                    continue
                ready -= 1
            in_place.add(m.ordinal)
    if (max_unavailable > 0 or preempt_unavailable > 0) and not hold_retirement:  # 3. within maxUnavailable
        for m in order:
            if m.ordinal in retire or m.ordinal in in_place or (m.in_place and not m.leaving):
                continue
            preempted = m.leaving and m.preempted
            if not preempted and (max_unavailable == 0 or (m.leaving and not retire_leaving)):
                continue
            bound = preempt_floor if preempted else floor
            if total - 1 < bound:
                continue
            take(m, bound)
    kept_old = sum(1 for m in old if m.ordinal not in retire and m.ordinal not in in_place and not m.leaving)
    have = staying_current + len(in_place) + (kept_old if paused else 0)
    add = max(0, min(replicas - have, replicas + max_surge - total))
    return Wave(frozenset(retire), frozenset(in_place), add)
