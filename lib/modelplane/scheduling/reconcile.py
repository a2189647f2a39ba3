"""What a deployment already runs, and what happens to each existing replica.

For each replica the deployment observes (``Existing``), in ordinal order:

1. read it: the deployment's own copy wins over the fleet's of the same name; a replica
   named like the deployment's but of another ordinal scheme is *unmanaged* (it holds
   its GPUs, never scheduled); a fleet copy of one the deployment cannot read is a
   *shadow* (its GPUs are taken, nothing is scheduled from it);
2. keep it (``modelplane.scheduling.hold.existing_placement``): sticky where it runs, taking the
   deployment's shape where that can run there, held at its observed spec otherwise;
   leaving when its cluster drains or is being deleted, lost past the failover grace;
   placed again when a cluster found it beyond its capacity, or a FleetQuota beyond a limit, and it
   is not Ready yet; *leaving* (``HoldReason.PREEMPTED``) when, serving, it gives way to a higher
   priority: its cluster lists it in ``status.capacity.preempted`` (a replica of a higher priority
   waits for its GPUs) or a FleetQuota with preemption LowerPriority in ``status.preempted`` (a higher
   priority's serving replicas take its limit). Like a replica leaving a draining cluster it is
   replaced surge-first and retired within the rollout's maxSurge/maxUnavailable;
3. scale down: beyond ``spec.replicas`` (plus ``maxSurge`` while a rollout runs), remove
   in order those placed again, held or stale, old, on clusters that take no new
   replicas, not Ready, with an objective (``CostOptimized``, ``CarbonAware``) the costliest
   (those without a figure first), then the highest ordinals; the last Ready replica of a
   cluster in ``spec.placement.pinnedClusters`` goes only when no other can; and wait
   instead while any input that choice hangs on cannot be read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from modelplane.capacity import DeploymentKey, Occupancy
from modelplane.capacity.clusters import ClusterInfo
from modelplane.names import replica_ordinal
from modelplane.scheduling.devices import ClassJudge
from modelplane.scheduling.hold import existing_placement
from modelplane.scheduling.placement import Placement
from modelplane.scheduling.quotas import Quota
from modelplane.scheduling.request import Request
from modelplane.scheduling.strategy import Strategy
from modelplane.scheduling.view import FleetView

if TYPE_CHECKING:
    from modelplane.scheduling.costs import Objective


@dataclass(frozen=True)
class Existing:
    """What a deployment observes of what it runs (the fleet's facts are in its ``FleetView``).

    Attributes:
        replicas: Its replicas as it observes them (its own composed resources), by
            ordinal: they win over the listed ModelReplicas of the same name, and
            count even when the list leaves them out.
        listed: The ModelReplicas the fleet lists as this deployment's (its label), which
            may include some its composed resources no longer show.
        revision: The revision of the deployment's serving shape (``shape_revision``):
            a replica whose ``Occupancy.revision`` differs runs an older revision and is
            rolled to it in waves (``modelplane.scheduling.rollout``); with "" there is
            no rollout and every replica takes the deployment's shape where it can.
        opaque: Ordinals of replicas that exist but cannot be read: the caller keeps
            them as they are; they count towards ``spec.replicas`` and their
            ordinals are never given to another replica.
        lost: InferenceClusters that are not Ready or absent, by name: for how many
            seconds (from the caller's clock and a condition's lastTransitionTime) and why.
        strategy: The rollout and failover settings; None reads them from the deployment's spec.
        unsure: Ordinals of replicas that do not say whether they are Ready (no status yet, or a
            Ready condition that is neither True nor False): while there is one, nothing is
            retired or removed (the choice and the Ready count would hang on it).
        going: Replicas being deleted (retired or removed by an earlier call, or deleted by
            hand), by ordinal: they are no longer the deployment's (never counted, kept, updated
            or retired again) but hold their GPUs until they are gone (None: it cannot be read,
            so it holds none), and their ordinals are not given to another replica meanwhile.
    """

    replicas: Mapping[int, Occupancy] = field(default_factory=dict)
    listed: Sequence[Occupancy] = ()
    revision: str = ""
    opaque: frozenset[int] = frozenset()
    lost: Mapping[str, tuple[float, str]] = field(default_factory=dict)
    strategy: Strategy | None = None
    unsure: frozenset[int] = frozenset()
    going: Mapping[int, Occupancy | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Own:
    """One replica of the deployment: its name, ordinal and what it holds."""

    name: str
    ordinal: int
    occupancy: Occupancy


@dataclass(frozen=True)
class Kept:
    """What happens to the existing replicas: kept (None: placed again), leaving, lost, removed, staying, retired."""

    placements: Mapping[int, Placement | None]
    leaving: list[Own]
    removed: list[Own]
    staying: list[Own]
    waiting: int = 0
    lost: list[Own] = field(default_factory=list)
    old: frozenset[int] = frozenset()
    retired: list[Own] = field(default_factory=list)
    in_place: frozenset[int] = frozenset()
    unsettled: bool = False  # an input a retirement would hang on is unknown: retire nothing
    moved: Mapping[int, str] = field(default_factory=dict)  # placed again off a cluster it overcommits, by ordinal
    exceeded: frozenset[int] = frozenset()  # placed again: a FleetQuota found it beyond a limit, not serving yet
    preempted: frozenset[int] = frozenset()  # leaving: serving, it gives way to a higher priority (LowerPriority)


@dataclass(frozen=True)
class Replicas:
    """The deployment's replicas by ordinal, the unmanaged ones and the shadows (see the module's step 1)."""

    own: list[Own]
    unmanaged: list[Occupancy]
    shadows: list[Occupancy]


def read_replicas(key: DeploymentKey, existing: Existing) -> Replicas:
    """Step 1: this deployment's replicas by ordinal (observed first), the unmanaged, and shadows.

    Replicas being deleted (``going``) are shadows as observed, whatever the fleet's copy says.
    """
    own = {o: Own(h.name, o, replace(h, deployment=key)) for o, h in existing.replicas.items()}
    names = {o.name for o in own.values()}
    unmanaged: list[Occupancy] = []
    shadows: list[Occupancy] = []
    for occupancy in existing.listed:
        if occupancy.deployment != key or occupancy.name in names:
            continue
        ordinal = replica_ordinal(key.name, occupancy.name)
        if ordinal is None:
            unmanaged.append(occupancy)
        elif ordinal in existing.going:
            continue
        elif ordinal in existing.opaque:
            shadows.append(occupancy)
        elif ordinal not in own:
            own[ordinal] = Own(occupancy.name, ordinal, occupancy)
    shadows += [h for o, h in existing.going.items() if h is not None and o not in own]
    return Replicas(
        [own[o] for o in sorted(own)],
        sorted(unmanaged, key=lambda h: h.name),
        sorted(shadows, key=lambda h: h.name),
    )


def lost_why(o: Own, existing: Existing, after: float | None, replaced: frozenset[str]) -> str:
    """Why ``o``'s cluster counts as lost past the failover grace; "" when it does not (or failover is off)."""
    lost = existing.lost.get(o.occupancy.cluster)
    if lost is None or after is None:
        return ""
    seconds, why = lost
    if seconds < after and o.name not in replaced:
        return ""
    return f"InferenceCluster {o.occupancy.cluster} {why} for longer than spec.failover.after ({int(after)}s)"


def keep_existing(  # noqa: PLR0913 - the fleet, the deployment and what it runs
    view: FleetView,
    judge: ClassJudge,
    request: Request,
    strategy: Strategy,
    own: Sequence[Own],
    existing: Existing,
    *,
    objective: Objective | None = None,
    quotas: Sequence[Quota] = (),
) -> Kept:
    """Steps 2 and 3: each existing replica's placement, which are leaving or lost, and which scaling down removes."""
    replaced = frozenset(o.occupancy.replaces for o in own if o.occupancy.replaces)
    deleting, draining = view.deleting(), view.draining()
    sure = [o for o in own if o.ordinal not in existing.unsure]
    moved = _overcommitting(view, sure)
    exceeded = frozenset(o.ordinal for o in _beyond_quota(quotas, sure, serving=False) if o.ordinal not in moved)
    preempted = _preempted(view, quotas, sure)
    kept = {
        o.ordinal: None
        if o.ordinal in moved or o.ordinal in exceeded
        else existing_placement(
            o.name,
            o.ordinal,
            o.occupancy,
            view.clusters.get(o.occupancy.cluster),
            unreadable=view.unreadable,
            deleting=deleting,
            requests=request.roles,
            judge=judge,
            selector=request.selector,
            changed=not existing.revision or o.occupancy.revision != existing.revision,
            draining=draining,
            lost=lost_why(o, existing, strategy.failover_after, replaced),
            preempted=preempted.get(o.ordinal, ""),
        )
        for o in own
    }
    leaving = [o for o in own if (p := kept[o.ordinal]) is not None and p.held is not None and p.held.leaving]
    lost = [o for o in own if (p := kept[o.ordinal]) is not None and p.held is not None and p.held.lost]
    counting = [o for o in own if o not in leaving and o not in lost]
    old = frozenset(o.ordinal for o in own if existing.revision and o.occupancy.revision != existing.revision)
    # While old replicas remain, a rollout may run maxSurge replicas beyond spec.replicas.
    allowance = strategy.max_surge if any(o.ordinal in old for o in counting) else 0
    wanted = request.replicas - len(existing.opaque) + allowance
    removed = scale_down(counting, kept, wanted, view.clusters, old, objective=objective, pinned=request.policy.pinned)
    # Which replica scaling down removes must not hang on an input that cannot be read: wait for it.
    # So must which replica a rollout, a drain or a failover retires, and whether enough are Ready
    # without it: both wait while a replica does not say whether it is Ready.
    unknown = (
        bool(existing.opaque)
        or any(o.ordinal in existing.unsure for o in own)
        or any(
            (p := kept[o.ordinal]) is not None and p.held is not None and p.held.reason.input_missing for o in counting
        )
    )
    waiting = len(removed) if unknown else 0
    if unknown:
        removed = []
    staying = [o for o in counting if o not in removed]
    return Kept(
        kept,
        leaving,
        removed,
        staying,
        waiting,
        lost,
        old,
        unsettled=unknown,
        moved=moved,
        exceeded=exceeded,
        preempted=frozenset(o.ordinal for o in leaving if (p := kept[o.ordinal]) and p.held and p.held.preempted),
    )


def _beyond_quota(quotas: Sequence[Quota], own: Iterable[Own], *, serving: bool) -> list[Own]:
    """The replicas a FleetQuota of the namespace lists beyond a limit.

    Not serving (``serving`` False): listed in ``status.exceeded``, placed again and withdrawn when
    nothing takes them. Serving: listed in ``status.preempted`` (preemption LowerPriority, once the
    higher priority serves), leaving. A replica that serves is never withdrawn for ``exceeded``.
    """
    listed: frozenset[str] = frozenset().union(*((q.preempted if serving else q.exceeded) for q in quotas))
    if not listed:
        return []
    return [o for o in own if o.occupancy.ready == serving and f"{o.occupancy.namespace}/{o.name}" in listed]


def _preempted(view: FleetView, quotas: Sequence[Quota], own: Sequence[Own]) -> dict[int, str]:
    """The serving replicas that give way to a higher priority, by ordinal, with why: each is leaving.

    Its cluster lists it in ``status.capacity.preempted`` (a replica of a higher priority, placed in its
    place, waits for its GPUs), or a FleetQuota in ``status.preempted``. Only a replica that is Ready:
    one that is not serving yet is moved for ``overcommitted`` instead, and the caller leaves out
    those that do not say whether they are Ready.
    """
    out: dict[int, str] = {}
    for o in own:
        by = view.preempted.get(o.occupancy.cluster, {}).get(f"{o.occupancy.namespace}/{o.name}")
        if o.occupancy.ready and by is not None:
            out[o.ordinal] = (
                f"{by}, of a higher priority, takes its place on InferenceCluster {o.occupancy.cluster}"
                " (its FleetQuota allows preemption LowerPriority)"
            )
    listed = {o.ordinal for o in _beyond_quota(quotas, own, serving=True)}
    for o in own:
        if o.ordinal in listed and o.ordinal not in out:
            names = sorted(q.name for q in quotas if f"{o.occupancy.namespace}/{o.name}" in q.preempted)
            out[o.ordinal] = (
                f"FleetQuota {', '.join(names)} (preemption LowerPriority) gives its accelerators"
                " to replicas of a higher priority, which serve"
            )
    return out


def _overcommitting(view: FleetView, own: Iterable[Own]) -> dict[int, str]:
    """The replicas, not Ready, that their cluster found placed beyond its capacity: each is placed again elsewhere.

    A Ready replica is never moved for this: it runs, so the cluster's figure, not the replica, is wrong;
    nor is one that does not say whether it is Ready (the caller leaves those out).
    """
    out = {}
    for o in own:
        listed = view.overcommitted.get(o.occupancy.cluster, frozenset())
        if not o.occupancy.ready and f"{o.occupancy.namespace}/{o.name}" in listed:
            out[o.ordinal] = o.occupancy.cluster
    return out


def scale_down(  # noqa: PLR0913 - the order's inputs
    own: Sequence[Own],
    kept: Mapping[int, Placement | None],
    replicas: int,
    clusters: Mapping[str, ClusterInfo],
    old: frozenset[int] = frozenset(),
    *,
    objective: Objective | None = None,
    pinned: frozenset[str] = frozenset(),
) -> list[Own]:
    """The replicas beyond ``replicas``, in the order of the module's step 3.

    Placed again, held, stale, old; on unschedulable clusters; not Ready; the costliest (with an
    ``objective``); the highest ordinal. Like a ReplicaSet, a scale-down never removes a serving
    replica while one that is not serving can go; and it keeps the last Ready replica of each
    ``pinned`` cluster while another can go.
    """

    def order(o: Own) -> tuple[bool, bool, bool, bool, tuple[int, Decimal], int]:
        placement = kept[o.ordinal]
        cluster = clusters.get(placement.cluster) if placement is not None else None
        schedulable = cluster is not None and cluster.schedulable
        fresh = placement is not None and not placement.stale and placement.held is None and o.ordinal not in old
        return (placement is not None, fresh, schedulable, o.occupancy.ready, _dearest(o, objective), -o.ordinal)

    ranked = sorted(own, key=order)
    excess = max(0, len(own) - replicas)
    if not pinned:
        return ranked[:excess]
    # The last Ready replica of a pinned cluster goes last: pass it over while another can go.
    ready_on: dict[str, int] = {}
    for o in own:
        if o.occupancy.ready and o.occupancy.cluster in pinned:
            ready_on[o.occupancy.cluster] = ready_on.get(o.occupancy.cluster, 0) + 1
    removed: list[Own] = []
    spared: list[Own] = []
    for o in ranked:
        if len(removed) == excess:
            break
        cluster = o.occupancy.cluster
        if o.occupancy.ready and cluster in pinned:
            if ready_on[cluster] == 1:
                spared.append(o)
                continue
            ready_on[cluster] -= 1
        removed.append(o)
    return removed + spared[: excess - len(removed)]


_NO_FIGURE = (0, Decimal(0))


def _dearest(o: Own, objective: Objective | None) -> tuple[int, Decimal]:
    """Sort key: the replica costing (or emitting) most per hour first; one without the figure before all."""
    if objective is None:
        return _NO_FIGURE
    figure = objective.of(((o.occupancy.cluster, r.pool), r.footprint) for r in o.occupancy.roles)
    return _NO_FIGURE if figure is None else (1, -figure)
