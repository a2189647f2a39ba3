"""A rollout's wave applied to the existing replicas, and the states and summary it leaves.

``modelplane.scheduling.rollout.wave`` decides, from counts, how many replicas to add and
which to retire or update in place; this module applies that to the replicas the
deployment keeps (``modelplane.scheduling.reconcile.Kept``) and, once they are placed,
names each placement's state and sums the rollout up for status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from modelplane.scheduling.hold import observed_roles
from modelplane.scheduling.placement import Held, HoldReason, Origin, Placement, State
from modelplane.scheduling.reconcile import Existing, Kept, Own
from modelplane.scheduling.rejection import Unplaced
from modelplane.scheduling.result import Pending, Rollout
from modelplane.scheduling.rollout import Member, wave
from modelplane.scheduling.strategy import Strategy


def apply_wave(  # noqa: PLR0913 - the wave's inputs, and how the scheduler bounds it
    decided: Kept,
    strategy: Strategy,
    replicas: int,
    in_place_unavailable: int | None,
    existing: Existing,
    *,
    retire_leaving: bool = True,
    preempt_unavailable: int = 0,
) -> tuple[Kept, int]:
    """Apply one wave: retire, update in place, hold the other old replicas; return them and how many to add.

    Replicas that cannot be read hold their slots and count as not Ready; while a retirement would
    hang on an unknown input (``Kept.unsettled``), nothing is retired: the rollout shows it in progress.
    """
    current: list[Member] = []
    old: list[Member] = []
    for o in [*decided.staying, *decided.leaving]:
        placement = decided.placements[o.ordinal]
        leaving = o in decided.leaving
        # A replica that changes shape kind is placed again under its name: an in-place update too.
        in_place = placement is None or placement.held is None
        preempted = o.ordinal in decided.preempted
        member = Member(o.ordinal, o.occupancy.ready, leaving=leaving, in_place=in_place, preempted=preempted)
        (old if o.ordinal in decided.old else current).append(member)
    step = wave(
        replicas,
        current,
        old,
        max_surge=strategy.max_surge,
        max_unavailable=strategy.max_unavailable,
        paused=strategy.paused,
        in_place_unavailable=in_place_unavailable,
        retire_leaving=retire_leaving,
        opaque=len(existing.opaque),
        hold_retirement=decided.unsettled,
        preempt_unavailable=preempt_unavailable,
    )
    placements = dict(decided.placements)
    for o in decided.staying:
        if o.ordinal not in decided.old or o.ordinal in step.in_place:
            continue
        placement = placements[o.ordinal]
        if placement is not None and placement.held is not None:
            continue  # held for a reason of its own (an input, or the new shape cannot run there)
        why = f"it runs revision {o.occupancy.revision or 'unknown'} and waits for its wave of the rollout"
        placements[o.ordinal] = Placement(
            o.name, o.ordinal, o.occupancy.cluster, observed_roles(o.occupancy), Origin.KEPT,
            held=Held(HoldReason.OUTDATED, why),
        )  # fmt: skip
    retired = [o for o in [*decided.staying, *decided.leaving] if o.ordinal in step.retire]
    return (
        replace(
            decided,
            placements=placements,
            staying=[o for o in decided.staying if o.ordinal not in step.retire],
            leaving=[o for o in decided.leaving if o.ordinal not in step.retire],
            retired=retired,
            in_place=step.in_place,
        ),
        step.add,
    )


def falls_back(
    decided: Kept, kept: Kept, add: int, placements: Sequence[Placement], strategy: Strategy, replicas: int
) -> bool:
    """Whether a rollout wanted a surge replica, none could be placed, and an old one could be updated in place."""
    if strategy.paused or strategy.max_unavailable > 0 or not add or kept.in_place or kept.retired:
        return False
    # A surge in flight, or GPUs a retired replica frees by the next call, is no reason to give up on surging.
    if len(decided.staying) + len(decided.leaving) > replicas:
        return False
    if any(p.origin is Origin.NEW for p in placements):
        return False
    return any(
        o.ordinal in decided.old and ((p := decided.placements[o.ordinal]) is None or p.held is None)
        for o in decided.staying
    )


def pending_of(placed: Sequence[Placement], freed: Sequence[Placement], kept: Kept) -> tuple[Pending, ...]:
    """The new replicas that fit only once the retired and removed replicas' GPUs are released."""
    have = {p.ordinal for p in placed}
    releasing = sorted((*kept.retired, *kept.removed), key=lambda o: o.ordinal)
    out = []
    for p in sorted(freed, key=lambda p: p.ordinal):
        if p.ordinal in have or p.origin is Origin.KEPT:
            continue
        there = tuple(o.name for o in releasing if o.occupancy.cluster == p.cluster)
        out.append(Pending(p.replica, p.ordinal, p.cluster, there or tuple(o.name for o in releasing)))
    return tuple(out)


def waiting_for_preempted(
    preempted: Mapping[str, Mapping[str, str]], placements: Sequence[Placement], own: Sequence[Own]
) -> tuple[Pending, ...]:
    """The deployment's replicas, not serving yet, that wait for serving replicas of a lower priority to go.

    Their cluster placed them in the place of those replicas (``status.capacity.preempted``, each with the
    replica that takes its place): they are pending on them, not unplaced.
    """
    names = {o.name: o for o in own if not o.occupancy.ready}
    out = []
    for p in sorted(placements, key=lambda p: p.ordinal):
        o = names.get(p.replica)
        if o is None or p.origin is not Origin.KEPT:
            continue
        me = f"{o.occupancy.namespace}/{o.name}"
        victims = tuple(sorted(v for v, by in preempted.get(p.cluster, {}).items() if by == me))
        if victims:
            out.append(Pending(p.replica, p.ordinal, p.cluster, victims, preempted=True))
    return tuple(out)


def leaving_retired(kept: Kept, unplaced: Sequence[Unplaced]) -> bool:
    """Whether this wave retires a leaving replica while a replacement cannot be placed.

    Not one that gives way to a higher priority: the GPUs it frees are the point of retiring it.
    """
    return bool(unplaced) and any(o.ordinal not in kept.old and o.ordinal not in kept.preempted for o in kept.retired)


def preempted_stuck(kept: Kept, unplaced: Sequence[Unplaced], strategy: Strategy) -> bool:
    """Whether a preempted replica stays because maxUnavailable is 0 and its replacement fits nowhere."""
    staying = {o.ordinal for o in kept.leaving}
    return strategy.max_unavailable == 0 and bool(unplaced) and bool(kept.preempted & staying)


def blocked(unplaced: Unplaced) -> str:
    """Why a leaving replica cannot move: its replacement's reason."""
    return f"no replacement can be placed ({unplaced.reason}: {unplaced.message})"


def with_states(placements: Sequence[Placement], kept: Kept, own: Sequence[Own]) -> list[Placement]:
    """Each placement's state, and for replacements of lost replicas which they replace."""
    moving = bool(kept.old & {o.ordinal for o in kept.staying}) or bool(kept.leaving) or bool(kept.lost)
    lost = sorted(o.name for o in kept.lost)
    by_ordinal = {o.ordinal: o for o in own}
    carried = {o.occupancy.replaces for o in own if o.occupancy.replaces in lost}
    fresh = iter([name for name in lost if name not in carried])
    out = []
    for p in sorted(placements, key=lambda p: p.ordinal):
        o = by_ordinal.get(p.ordinal)
        replaces = o.occupancy.replaces if o is not None and o.occupancy.replaces in lost else ""
        if p.origin is Origin.NEW and not replaces:
            replaces = next(fresh, "")
        out.append(replace(p, state=_state(p, kept, moving=moving), replaces=replaces))
    return out


def _state(p: Placement, kept: Kept, *, moving: bool) -> State:
    if p.held is not None:
        if p.held.leaving:
            return State.LEAVING
        if p.held.lost:
            return State.LOST
        return State.OUTDATED if p.held.reason is HoldReason.OUTDATED else State.HELD
    if p.ordinal in kept.in_place:
        return State.UPDATING
    return State.SURGE if p.origin is Origin.NEW and moving else State.CURRENT


def summary(
    revision: str, placements: Sequence[Placement], kept: Kept, own: Sequence[Own], fallback: str, *, paused: bool
) -> Rollout:
    """The rollout's state for status: how many run the revision, which are outdated, leaving, lost or waiting."""
    ready = {o.ordinal for o in own if o.occupancy.ready}
    current = [p for p in placements if p.state in (State.CURRENT, State.UPDATING, State.SURGE)]
    return Rollout(
        revision=revision,
        updated=len(current),
        outdated=tuple(p.replica for p in placements if p.state is State.OUTDATED),
        leaving=tuple(p.replica for p in placements if p.state is State.LEAVING),
        lost=tuple(p.replica for p in placements if p.state is State.LOST),
        waiting=tuple(p.replica for p in current if p.ordinal not in ready or p.state is State.UPDATING),
        retired_old=tuple(o.name for o in sorted(kept.retired, key=lambda o: o.ordinal) if o.ordinal in kept.old),
        retired_draining=tuple(
            o.name
            for o in sorted(kept.retired, key=lambda o: o.ordinal)
            if o.ordinal not in kept.old
            and (p := kept.placements[o.ordinal]) is not None
            and p.held is not None
            and p.held.reason is HoldReason.CLUSTER_DRAINING
        ),
        retired_pool_removed=tuple(
            o.name
            for o in sorted(kept.retired, key=lambda o: o.ordinal)
            if o.ordinal not in kept.old
            and (p := kept.placements[o.ordinal]) is not None
            and p.held is not None
            and p.held.reason is HoldReason.POOL_REMOVING
        ),
        retired_preempted=tuple(
            o.name for o in sorted(kept.retired, key=lambda o: o.ordinal) if o.ordinal in kept.preempted
        ),
        fallback=fallback,
        paused=paused,
    )
