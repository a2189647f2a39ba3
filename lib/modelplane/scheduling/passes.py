"""One placement pass: account for what exists, place again what must move, then place new replicas.

1. occupy what exists: replicas retired or removed still run until deleted; unmanaged
   replicas and shadows hold their GPUs; leaving replicas (a draining cluster, a pool taken
   out of the spec) hold their FleetQuotas' accelerators until they are retired; kept
   replicas hold theirs in ordinal order, a reshaped one at its new shape only if its
   pools have room for it after every other replica (held at its old shape otherwise). A
   replica its pool's published figure counts already holds its GPUs there: holding it
   takes nothing more, and one that moves, is reshaped or released gives them back;
2. place again, under their names, the replicas that must move (changed between unified
   and disaggregated, or found beyond a cluster's capacity): one that does not fit stays
   where it is, held;
3. place new replicas at the lowest unused ordinals, stopping at the first that does not
   fit (replicas share one shape and capacity only shrinks): the rest are counted, and the
   first ``LISTED`` named.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import count, islice

from modelplane.capacity import Occupancy
from modelplane.names import replica_name
from modelplane.scheduling.hold import observed_roles
from modelplane.scheduling.placement import Held, HoldReason, Origin, Placement
from modelplane.scheduling.placer import Placer
from modelplane.scheduling.reconcile import Existing, Kept, Own
from modelplane.scheduling.rejection import LISTED, Unplaced
from modelplane.topology import Footprint


@dataclass(frozen=True)
class Outcome:
    """A pass's placements, the replicas left unplaced, and how many of the wanted could not be placed.

    ``withdrawn`` names the replicas, not serving, that a cluster found beyond its capacity and that
    fit nowhere else: they are removed and counted as unplaced (placed again once room appears).
    """

    placements: list[Placement]
    unplaced: list[Unplaced]
    shortfall: int
    withdrawn: tuple[str, ...] = ()


def place_pass(  # noqa: PLR0913 - one scheduling pass over what exists
    run: Placer,
    kept: Kept,
    add: int,
    own: Sequence[Own],
    taken: Sequence[Occupancy],
    existing: Existing,
    *,
    release: bool = False,
) -> Outcome:
    """Account for what exists, then place the replicas to place again and ``add`` new ones.

    With ``release``, the replicas retired or removed now hold no GPUs (as on a later call).
    """
    placements = _occupy_existing(run, kept, taken, release=release)  # 1.
    failed, withdrawn = _place_again(run, kept, placements)  # 2.
    used = {o.ordinal for o in own} | existing.opaque | set(existing.going)
    unplaced, shortfall = _place_new(run, add, used, failed, placements)  # 3.
    placements += [p for o in (*kept.leaving, *kept.lost) if (p := kept.placements[o.ordinal]) is not None]
    names = tuple(u.replica for u in withdrawn)
    return Outcome(placements, [*withdrawn, *unplaced], shortfall + len(withdrawn), names)


def _occupy_existing(run: Placer, kept: Kept, taken: Sequence[Occupancy], *, release: bool = False) -> list[Placement]:
    """Account for what exists; return the kept placements, held at their shape where a new one does not fit.

    A replica whose shape changed takes the new shape in place of its old one
    only if its pools have room for it after every other replica, those held at
    their old shape included; the check is repeated until no more are held.
    """
    _occupy_others(run, kept, taken, release=release)
    # Kept replicas in ordinal order, as they were placed: a re-run rebuilds the same nodes.
    staying = [(o, p) for o in kept.staying if (p := kept.placements[o.ordinal]) is not None]
    reshaped = {o.ordinal for o, p in staying if p.held is None and p.roles != observed_roles(o.occupancy)}
    start = run.snapshot()
    held: set[int] = set()
    while True:
        for o, _ in staying:
            if o.ordinal not in reshaped or o.ordinal in held:
                run.occupy(o.occupancy.cluster, _roles(o.occupancy), own=False, name=_name(o.occupancy))
        short = []
        for o, p in staying:
            if o.ordinal not in reshaped - held:
                continue
            run.release(_name(o.occupancy), o.occupancy.cluster, _roles(o.occupancy))
            if not run.occupy(p.cluster, [(r.pool, r.footprint) for r in p.roles], own=False, strict=True):
                short.append(o.ordinal)
        if not short:
            break
        held.update(short)
        run.restore(start)
    for _, p in staying:
        run.count(p.cluster)
    return [_shape_held(p, o.occupancy) if o.ordinal in held else p for o, p in staying]


def _occupy_others(run: Placer, kept: Kept, taken: Sequence[Occupancy], *, release: bool) -> None:
    """Account for the replicas that go (retired or removed), the taken ones, and those placed again."""
    for o in (*kept.removed, *kept.retired):  # Still running until deleted, unless released.
        # A replica that gives way to a higher priority releases its GPUs and quota to that one, not to us.
        if release and o.ordinal not in kept.preempted:
            run.release(_name(o.occupancy), o.occupancy.cluster, _roles(o.occupancy))
        else:
            run.occupy(o.occupancy.cluster, _roles(o.occupancy), own=False, name=_name(o.occupancy))
    for h in taken:
        run.occupy(h.cluster, _roles(h), own=bool(h.roles), name=_name(h))
    for o in kept.leaving:  # running until its replacement serves: it holds its quota, not capacity
        run.charge_quota(_name(o.occupancy), o.occupancy.cluster, _roles(o.occupancy))
    for o in kept.staying:  # placed again: what it held where it runs is free once it moves
        if kept.placements[o.ordinal] is None:
            run.release(_name(o.occupancy), o.occupancy.cluster, _roles(o.occupancy))


def _place_again(run: Placer, kept: Kept, placements: list[Placement]) -> tuple[Unplaced | None, list[Unplaced]]:
    """Place the replicas that must move; return the first failure and the replicas withdrawn.

    One that changed shape kind and does not fit stays where it is, held; its failure is returned:
    new replicas of the same shape would fail alike. One found beyond its cluster's capacity, or a
    FleetQuota's limit (not serving), that fits nowhere else is withdrawn: it cannot run where it is either.
    """
    failed: Unplaced | None = None
    withdrawn: list[Unplaced] = []
    for o in kept.staying:
        if kept.placements[o.ordinal] is not None:
            continue
        avoid = kept.moved.get(o.ordinal, "")
        withdraws = bool(avoid) or o.ordinal in kept.exceeded
        if failed is not None and not withdraws:
            outcome: Placement | Unplaced = replace(failed, replica=o.name)
        else:
            outcome = run.place(o.name, o.ordinal, Origin.MOVED, avoid=avoid)
        if isinstance(outcome, Placement):
            placements.append(outcome)
        elif withdraws:
            # Its own cluster, which found it placed concurrently beyond capacity, is among the rejections.
            withdrawn.append(outcome)
        else:
            failed = failed or outcome
            held = Held(HoldReason(str(outcome.reason)), f"it cannot be placed again: {outcome.message}")
            placements.append(
                Placement(o.name, o.ordinal, o.occupancy.cluster, observed_roles(o.occupancy), Origin.KEPT, held=held)
            )
    return failed, withdrawn


def _place_new(
    run: Placer, wanted: int, used: set[int], failed: Unplaced | None, placements: list[Placement]
) -> tuple[list[Unplaced], int]:
    """Place up to ``wanted`` new replicas at the lowest unused ordinals; return the unplaced and the shortfall."""
    key = run.request.key
    ordinals = _unused(used)
    unplaced: list[Unplaced] = []
    while wanted and failed is None:
        ordinal = next(ordinals)
        wanted -= 1
        outcome = run.place(replica_name(key.name, ordinal), ordinal, Origin.NEW)
        if isinstance(outcome, Placement):
            placements.append(outcome)
        else:
            failed = outcome
            unplaced.append(outcome)
    shortfall = len(unplaced) + wanted
    if failed is not None:
        for ordinal in islice(ordinals, min(wanted, LISTED - len(unplaced))):
            unplaced.append(replace(failed, replica=replica_name(key.name, ordinal), ordinal=ordinal))
    return unplaced, shortfall


def _name(occupancy: Occupancy) -> str:
    return f"{occupancy.namespace}/{occupancy.name}"


def _roles(occupancy: Occupancy) -> list[tuple[str, Footprint]]:
    return [(r.pool, r.footprint) for r in occupancy.roles]


def _unused(used: set[int]) -> Iterator[int]:
    """The ordinals not in ``used``, lowest first (lazily: never as many as ``spec.replicas``)."""
    return (i for i in count() if i not in used)


def _shape_held(placement: Placement, occupancy: Occupancy) -> Placement:
    pools = ", ".join(r.pool for r in placement.roles)
    why = f"the new shape does not fit the free capacity of pool(s) {pools} of InferenceCluster {placement.cluster}"
    return replace(
        placement, roles=observed_roles(occupancy), stale="", held=Held(HoldReason.INSUFFICIENT_CAPACITY, why)
    )
