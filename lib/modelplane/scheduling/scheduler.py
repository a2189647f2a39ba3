"""The fleet scheduler: where each replica of a ModelDeployment runs.

First, what exists (``modelplane.scheduling.hold``): each existing replica keeps
its placement (sticky: never reshuffle what runs), taking the deployment's
serving shape where that shape can run there, else keeping its observed spec
(held: an input it depends on is gone or unreadable, or the new shape does not
fit its pool). A replica whose cluster is being deleted is *leaving*: it is kept
while a replacement is placed, and retired once enough replicas are Ready without it.
A replica that changed between unified and disaggregated is placed again, under
the same name, and held where it is when that fails.

Then, per new replica, in ordinal order:

1. candidate clusters: labels match ``clusterSelector``; cordoned clusters and
   clusters without a ``Ready=True`` condition (including those with no status
   yet) take no new replicas;
2. candidate pools per role: the pool's class suits the role's node selector
   and topology (``modelplane.scheduling.devices``);
3. capacity: every worker of every role fits on the pool's nodes
   (``modelplane.capacity``), after other deployments' replicas and this
   deployment's own kept replicas; prefill and decode share one cluster and,
   when they share a pool, are packed together;
4. score: the fewest replicas of this deployment on the cluster (spread), then
   the fewest GPUs stranded on the nodes taken and the fewest free GPUs left in
   the pools used (best fit), then cluster and pool names (ties); the part of
   the score that beat the runner-up is recorded on the placement
   (``modelplane.scheduling.decision``).

Placing stops at the first replica that does not fit: the rest are counted, not
tried, so time and memory follow what is placed, never ``spec.replicas``.

Replicas are named ``modelplane.scheduling.names.replica_name(deployment,
ordinal)``. Scaling up adds the lowest unused ordinals; scaling down removes,
in order: replicas that must be placed again, then held or stale ones, then
those on cordoned or not-Ready clusters, then those not Ready, then the highest
ordinals; it waits while a replica's inputs cannot be read (the choice would
hang on them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import count, islice, product

from modelplane.capacity import DeploymentKey, Holding, NodeFree, PoolKey
from modelplane.capacity.clusters import ClusterInfo
from modelplane.capacity.pools import as_cluster_info, as_holding, free_nodes, pool_specs
from modelplane.problems import Problem
from modelplane.scheduling.celmatch import match_cel
from modelplane.scheduling.decision import Score, decide
from modelplane.scheduling.devices import (
    ClassJudge,
    ClassView,
    DeviceMatcher,
    DeviceRequest,
    PoolReason,
    RoleRequest,
    class_view,
)
from modelplane.scheduling.hold import keep, observed_roles
from modelplane.scheduling.labels import LabelSelector, label_selector
from modelplane.scheduling.names import replica_name, replica_ordinal
from modelplane.scheduling.result import (
    LISTED,
    ClusterRejection,
    Held,
    HoldReason,
    Origin,
    Pending,
    Placement,
    PoolRejection,
    Reason,
    RolePlacement,
    Rollout,
    Schedule,
    State,
    Unplaced,
    pool_message,
    summarize,
)
from modelplane.scheduling.rollout import Member, wave
from modelplane.scheduling.strategy import Strategy, strategy_of
from modelplane.topology import Footprint, Role, TopologyError, replica_footprint
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment, NodeSelector, NodeSelector1
from modelplane_models.model_replica import ModelReplica


class InvalidDeploymentError(ValueError):
    """A ModelDeployment the scheduler cannot place at all, naming the field at fault."""

    def __init__(self, problem: Problem) -> None:
        """Carry the problem; the message is its ``field: message`` form."""
        super().__init__(str(problem))
        self.problem = problem


@dataclass(frozen=True)
class _Request:
    key: DeploymentKey
    replicas: int
    selector: LabelSelector
    roles: tuple[RoleRequest, ...]
    strategy: Strategy


@dataclass(frozen=True)
class _Own:
    name: str
    ordinal: int
    holding: Holding


@dataclass(frozen=True)
class _Option:
    waste: int  # GPUs left idle on the nodes a first worker of each role would take
    leftover: int
    pools: tuple[PoolKey, ...]  # per role, in role order


def _request(deployment: ModelDeployment) -> _Request:
    metadata, spec = deployment.metadata, deployment.spec
    if metadata is None or not metadata.name:
        raise InvalidDeploymentError(Problem("metadata.name", "required"))
    if spec is None:
        raise InvalidDeploymentError(Problem("spec", "required"))
    try:
        footprints = replica_footprint(spec)
    except TopologyError as error:
        raise InvalidDeploymentError(error.problem) from error
    roles = []
    selector: NodeSelector | NodeSelector1 | None
    for role, fp in footprints.roles:
        if role is Role.UNIFIED:
            selector, field = spec.nodeSelector, "spec.nodeSelector"
        else:
            block = spec.prefill if role is Role.PREFILL else spec.decode
            selector, field = (block.nodeSelector if block else None), f"spec.{role}.nodeSelector"
        if selector is None:
            raise InvalidDeploymentError(Problem(field, "required"))
        devices = tuple(DeviceRequest(d.name, d.cel, d.count or 1) for d in selector.devices or [])
        roles.append(RoleRequest(role, field, selector.cel, devices, fp))
    key = DeploymentKey(metadata.namespace or "", metadata.name)
    replicas = spec.replicas if spec.replicas is not None else 1
    return _Request(key, replicas, label_selector(spec.clusterSelector), tuple(roles), strategy_of(spec))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _needs(fp: Footprint) -> str:
    return (
        f"needs {_plural(fp.workers, 'worker')} of {_plural(fp.nodes_per_worker, 'node')}"
        f" x {_plural(fp.gpus_per_node, 'GPU')}"
    )


class _Scheduler:
    """One scheduling run: the parsed fleet and the free capacity as it is used up."""

    def __init__(
        self,
        request: _Request,
        clusters: Sequence[ClusterInfo],
        judge: ClassJudge,
        free: dict[PoolKey, NodeFree],
    ) -> None:
        self.request = request
        self.judge = judge
        self._clusters = clusters
        self._selected = [c for c in clusters if request.selector.matches(c.labels)]
        self._free = free
        self._spread: Counter[str] = Counter()
        self._eligible: dict[str, dict[Role, tuple[PoolKey, ...]] | ClusterRejection] = {}
        # A cluster's best option only changes with its own pools: placing a replica elsewhere keeps it.
        self._options: dict[str, _Option | None] = {}

    def hold(self, cluster: str, roles: Iterable[tuple[str, Footprint]], *, own: bool, strict: bool = False) -> bool:
        """Account for a replica that exists (it may not fit: existing replicas are never refused).

        With ``strict``, a replica that would hold GPUs its pools do not have is
        not accounted for, and False is returned.
        """
        # In the order ``_best_option`` takes them, so a kept replica leaves the nodes as placing it did.
        after: dict[PoolKey, NodeFree] = {}
        for pool, fp in sorted(roles, key=lambda r: _size(r[1])):
            key = (cluster, pool)
            if key in self._free:
                after[key], missing = after.get(key, self._free[key]).hold(fp)
                if strict and missing:
                    return False
        self._free.update(after)
        self._options.pop(cluster, None)
        if own:
            self._spread[cluster] += 1
        return True

    def snapshot(self) -> dict[PoolKey, NodeFree]:
        """The free capacity now, to ``restore`` after trying holds."""
        return dict(self._free)

    def restore(self, free: Mapping[PoolKey, NodeFree]) -> None:
        """Go back to the free capacity of a ``snapshot``."""
        self._free = dict(free)
        self._options.clear()

    def count(self, cluster: str) -> None:
        """Count one replica of the deployment on ``cluster`` (spread)."""
        self._spread[cluster] += 1

    def place(self, name: str, ordinal: int, origin: Origin) -> Placement | Unplaced:
        """Place one replica, or say why it cannot be placed."""
        # Plain tuples in the loop (it runs per cluster per replica); the two best become ``Score``s once.
        best: tuple[tuple[int, int, int, str, tuple[PoolKey, ...]], _Option] | None = None
        second: tuple[tuple[int, int, int, str, tuple[PoolKey, ...]], _Option] | None = None
        for cluster in self._selected:
            eligible = self._eligible_pools(cluster)
            if isinstance(eligible, ClusterRejection):
                continue
            if cluster.name not in self._options:
                self._options[cluster.name] = self._best_option(eligible)
            option = self._options[cluster.name]
            if option is None:
                continue
            score = (self._spread[cluster.name], option.waste, option.leftover, cluster.name, option.pools)
            if best is None or score < best[0]:
                best, second = (score, option), best
            elif second is None or score < second[0]:
                second = (score, option)
        if best is None:
            rejections = tuple(self._rejection(cluster) for cluster in self._selected)
            reason, message = summarize(rejections, len(self._clusters))
            return Unplaced(name, ordinal, reason, message, len(self._clusters), rejections)
        decision = decide(_score(*best[0]), None if second is None else _score(*second[0]))
        option = best[1]
        cluster_name = option.pools[0][0]
        after = self._take(option.pools)
        if after is None:  # pragma: no cover - the option was found to fit on these very nodes
            msg = f"option {option.pools} no longer fits"
            raise AssertionError(msg)
        self._free.update(after)
        self._options.pop(cluster_name, None)
        self._spread[cluster_name] += 1
        roles = tuple(
            RolePlacement(r.role, key[1], r.footprint) for r, key in zip(self.request.roles, option.pools, strict=True)
        )
        return Placement(name, ordinal, cluster_name, roles, origin, decision=decision)

    def _rejection(self, cluster: ClusterInfo) -> ClusterRejection:
        """Why ``cluster`` takes no replica now."""
        eligible = self._eligible_pools(cluster)
        return eligible if isinstance(eligible, ClusterRejection) else self._capacity_rejection(cluster, eligible)

    def _eligible_pools(self, cluster: ClusterInfo) -> dict[Role, tuple[PoolKey, ...]] | ClusterRejection:
        if cluster.name not in self._eligible:
            self._eligible[cluster.name] = self._judge_cluster(cluster)
        return self._eligible[cluster.name]

    def _judge_cluster(self, cluster: ClusterInfo) -> dict[Role, tuple[PoolKey, ...]] | ClusterRejection:
        if cluster.cordoned:
            return ClusterRejection(cluster.name, Reason.CORDONED, "cordoned")
        if not cluster.ready:
            return ClusterRejection(cluster.name, Reason.NOT_READY, cluster.not_ready)
        eligible: dict[Role, tuple[PoolKey, ...]] = {}
        rejected: list[PoolRejection] = []
        for request in self.request.roles:
            keys = []
            for pool in cluster.pools:
                fit = self.judge.fit(request, pool.class_name)
                free = self._free.get((cluster.name, pool.name))
                if fit.misfit is not None:
                    rejected.append(PoolRejection(pool.name, request.role, fit.misfit, fit.message))
                elif free is not None and free.nodes < request.footprint.nodes_per_worker:
                    # No amount of waiting makes a worker fit a pool with too few nodes.
                    message = f"{_needs(request.footprint)}; the pool has {_plural(free.nodes, 'node')}"
                    rejected.append(PoolRejection(pool.name, request.role, PoolReason.TOO_FEW_NODES, message))
                elif free is not None:
                    keys.append((cluster.name, pool.name))
            eligible[request.role] = tuple(keys)
        if all(eligible.values()):
            return eligible
        empty = [r for r, keys in eligible.items() if not keys]
        lacking = [p for p in rejected if p.role in empty]
        reason = (
            Reason.CEL_ERROR if any(p.reason is PoolReason.CEL_ERROR for p in lacking) else Reason.NO_MATCHING_POOLS
        )
        if not cluster.pools:
            message = "has no pools"
        else:
            message = "; ".join(_pool_message(p, self.request.roles) for p in lacking)
        return ClusterRejection(cluster.name, reason, message, tuple(rejected))

    def _best_option(self, eligible: Mapping[Role, tuple[PoolKey, ...]]) -> _Option | None:
        requests = self.request.roles
        best: _Option | None = None
        for keys in product(*(eligible[r.role] for r in requests)):
            leftover = self._leftover(keys)
            if leftover is None:
                continue
            option = _Option(self._waste(keys), leftover, keys)
            if best is None or (option.waste, option.leftover, keys) < (best.waste, best.leftover, best.pools):
                best = option
        return best

    def _waste(self, keys: tuple[PoolKey, ...]) -> int:
        """GPUs a worker of each role strands on the tightest nodes that fit it: best fit by node, not by pool."""
        waste = 0
        for key, request in zip(keys, self.request.roles, strict=True):
            g, k = request.footprint.gpus_per_node, request.footprint.nodes_per_worker
            counts = self._free[key].counts
            left = k
            for f in range(g, len(counts)):
                take = min(counts[f], left)
                waste += take * (f - g)
                left -= take
                if not left:
                    break
        return waste

    def _leftover(self, keys: tuple[PoolKey, ...]) -> int | None:
        """The GPUs left free on the pools ``keys`` (per role) once the replica is on them; None if it does not fit."""
        requests = self.request.roles
        if len(keys) == 1:
            nodes, fp = self._free[keys[0]], requests[0].footprint
            return nodes.free - fp.total_gpus if nodes.fits(fp) else None
        if len(set(keys)) == len(keys):
            # Roles on pools of their own fit independently, and each takes exactly its GPUs.
            if all(self._free[k].fits(r.footprint) for k, r in zip(keys, requests, strict=True)):
                return sum(self._free[k].free - r.footprint.total_gpus for k, r in zip(keys, requests, strict=True))
            return None
        after = self._take(keys)
        return None if after is None else sum(n.free for n in after.values())

    def _take(self, keys: tuple[PoolKey, ...]) -> dict[PoolKey, NodeFree] | None:
        """The pools ``keys`` (per role) with the replica placed on them; None if it does not fit."""
        requests = self.request.roles
        after: dict[PoolKey, NodeFree] = {}
        # Larger shapes first when roles share a pool (first fit decreasing).
        for i in sorted(range(len(requests)), key=lambda i: _size(requests[i].footprint)):
            nodes = after.get(keys[i], self._free[keys[i]]).take(requests[i].footprint)
            if nodes is None:
                return None
            after[keys[i]] = nodes
        return after

    def _capacity_rejection(
        self, cluster: ClusterInfo, eligible: Mapping[Role, tuple[PoolKey, ...]]
    ) -> ClusterRejection:
        pools = []
        alone = True
        for request in self.request.roles:
            for key in eligible[request.role]:
                nodes = self._free[key]
                if nodes.fits(request.footprint):
                    continue
                alone = False
                g = request.footprint.gpus_per_node
                with_room = sum(nodes.counts[g:])
                message = (
                    f"{_needs(request.footprint)}; {nodes.free} of {nodes.nodes * nodes.per_node} GPUs free,"
                    f" {_plural(with_room, 'node')} with {g} free"
                )
                pools.append(PoolRejection(key[1], request.role, PoolReason.INSUFFICIENT_CAPACITY, message))
        if alone:
            message = "prefill and decode do not fit on its pools together"
        else:
            message = "; ".join(_pool_message(p, self.request.roles) for p in pools)
        return ClusterRejection(cluster.name, Reason.INSUFFICIENT_CAPACITY, message, tuple(pools))


def _score(spread: int, stranded: int, left: int, cluster: str, pools: tuple[PoolKey, ...]) -> Score:
    return Score(spread, stranded, left, cluster, tuple(key[1] for key in pools))


def _size(fp: Footprint) -> tuple[int, int]:
    return (-fp.gpus_per_node, -fp.nodes_per_worker)


def _pool_message(rejection: PoolRejection, roles: Sequence[RoleRequest]) -> str:
    return pool_message(rejection.role, rejection.pool, rejection.message, len(roles))


def _read_replicas(
    holdings: Iterable[Holding],
    key: DeploymentKey,
    observed: Mapping[int, Holding],
    opaque: frozenset[int],
    going: Mapping[int, Holding | None],
) -> tuple[list[_Own], list[Holding], list[Holding]]:
    """This deployment's replicas by ordinal (observed first), the others (unmanaged), and shadows.

    Shadows are the fleet's copies of replicas the deployment cannot read (``opaque``): those are
    kept as they are, never scheduled from a copy, but their GPUs are taken. Replicas being
    deleted (``going``) are shadows as observed, whatever the fleet's copy says.
    """
    own = {ordinal: _Own(h.name, ordinal, replace(h, deployment=key)) for ordinal, h in observed.items()}
    names = {o.name for o in own.values()}
    unmanaged: list[Holding] = []
    shadows: list[Holding] = []
    for holding in holdings:
        if holding.deployment != key or holding.name in names:
            continue
        ordinal = replica_ordinal(key.name, holding.name)
        if ordinal is None:
            unmanaged.append(holding)
        elif ordinal in going:
            continue
        elif ordinal in opaque:
            shadows.append(holding)
        elif ordinal not in own:
            own[ordinal] = _Own(holding.name, ordinal, holding)
    shadows += [h for o, h in going.items() if h is not None and o not in own]
    return (
        [own[o] for o in sorted(own)],
        sorted(unmanaged, key=lambda h: h.name),
        sorted(shadows, key=lambda h: h.name),
    )


def _scale_down(
    own: Sequence[_Own],
    kept: Mapping[int, Placement | None],
    replicas: int,
    clusters: Mapping[str, ClusterInfo],
    old: frozenset[int] = frozenset(),
) -> list[_Own]:
    """The replicas beyond ``replicas``: placed again, held, stale, old; on unschedulable clusters; not Ready; highest.

    Like a ReplicaSet, a scale-down never removes a serving replica while one that is not serving can go.
    """

    def order(o: _Own) -> tuple[bool, bool, bool, bool, int]:
        placement = kept[o.ordinal]
        cluster = clusters.get(placement.cluster) if placement is not None else None
        schedulable = cluster is not None and not cluster.cordoned and cluster.ready
        fresh = placement is not None and not placement.stale and placement.held is None and o.ordinal not in old
        return (placement is not None, fresh, schedulable, o.holding.ready, -o.ordinal)

    return sorted(own, key=order)[: max(0, len(own) - replicas)]


def _unused(used: set[int]) -> Iterator[int]:
    """The ordinals not in ``used``, lowest first (lazily: never as many as ``spec.replicas``)."""
    return (i for i in count() if i not in used)


def _shape_held(placement: Placement, holding: Holding) -> Placement:
    pools = ", ".join(r.pool for r in placement.roles)
    why = f"the new shape does not fit the free capacity of pool(s) {pools} of InferenceCluster {placement.cluster}"
    return replace(placement, roles=observed_roles(holding), stale="", held=Held(HoldReason.INSUFFICIENT_CAPACITY, why))


@dataclass(frozen=True)
class Existing:
    """What a deployment observes of what it runs, beyond the fleet's ModelReplica list.

    Attributes:
        replicas: Its replicas as it observes them (its own composed resources), by
            ordinal: they win over the fleet's ModelReplicas of the same name, and
            count even when the fleet's list leaves them out.
        unreadable: InferenceClusters that exist but cannot be read, by name, with
            why: a replica there is held, not leaving.
        deleting: InferenceClusters being deleted: a replica there is leaving.
        revision: The revision of the deployment's serving shape (``shape_revision``):
            a replica whose ``Holding.revision`` differs runs an older revision and is
            rolled to it in waves (``modelplane.scheduling.rollout``); with "" there is
            no rollout and every replica takes the deployment's shape where it can.
        opaque: Ordinals of replicas that exist but cannot be read: the caller keeps
            them as they are; they count towards ``spec.replicas`` and their
            ordinals are never given to another replica.
        draining: InferenceClusters that drain: they take no new replicas and theirs are leaving.
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

    replicas: Mapping[int, Holding] = field(default_factory=dict)
    unreadable: Mapping[str, str] = field(default_factory=dict)
    revision: str = ""
    opaque: frozenset[int] = frozenset()
    deleting: frozenset[str] = frozenset()
    draining: frozenset[str] = frozenset()
    lost: Mapping[str, tuple[float, str]] = field(default_factory=dict)
    strategy: Strategy | None = None
    unsure: frozenset[int] = frozenset()
    going: Mapping[int, Holding | None] = field(default_factory=dict)


@dataclass(frozen=True)
class _Kept:
    """What happens to the existing replicas: kept (None: placed again), leaving, lost, removed, staying, retired."""

    placements: Mapping[int, Placement | None]
    leaving: list[_Own]
    removed: list[_Own]
    staying: list[_Own]
    waiting: int = 0
    lost: list[_Own] = field(default_factory=list)
    old: frozenset[int] = frozenset()
    retired: list[_Own] = field(default_factory=list)
    in_place: frozenset[int] = frozenset()
    unsettled: bool = False  # an input a retirement would hang on is unknown: retire nothing


def schedule(
    deployment: ModelDeployment,
    clusters: Iterable[InferenceCluster | ClusterInfo],
    classes: Iterable[InferenceClass],
    replicas: Iterable[ModelReplica | Holding],
    *,
    existing: Existing | None = None,
    matcher: DeviceMatcher = match_cel,
) -> Schedule:
    """Place the replicas of a ModelDeployment on the fleet.

    Pure and deterministic: the result depends on the inputs' contents, not
    their order.

    Args:
        deployment: The ModelDeployment.
        clusters: Every InferenceCluster of the fleet (models, or ``ClusterInfo``).
        classes: The InferenceClasses (at least those the clusters' pools name).
        replicas: Every ModelReplica of the fleet, this deployment's and others'
            (models, or their ``Holding``).
        existing: What the deployment observes of its own replicas (see ``Existing``).
        matcher: Evaluates a DRA CEL selector against a device kind; the
            default is the DRA CEL environment (``modelplane.cel``).

    Returns:
        The placements (held ones keep what they run), the replicas left
        unplaced with why, the replicas scaling down removes and those a
        rollout, a drain or a cluster's deletion retires, and the rollout's state.

    Raises:
        InvalidDeploymentError: The deployment has no name, no serving shape or
            an invalid topology.
    """
    request = _request(deployment)
    existing = existing or Existing()
    strategy = existing.strategy or request.strategy
    infos: dict[str, ClusterInfo] = {}
    for info in sorted((i for i in map(as_cluster_info, clusters) if i is not None), key=lambda i: i.name):
        if info.name not in existing.deleting:  # a cluster being deleted takes nothing new
            # A draining cluster takes nothing new either, as a cordoned one.
            infos.setdefault(info.name, replace(info, cordoned=True) if info.name in existing.draining else info)
    class_views: dict[str, ClassView] = {}
    for view in sorted((v for v in map(class_view, classes) if v is not None), key=lambda v: v.name):
        class_views.setdefault(view.name, view)
    holdings = [h for h in map(as_holding, replicas) if h is not None]
    own, unmanaged, shadows = _read_replicas(holdings, request.key, existing.replicas, existing.opaque, existing.going)
    mine = {o.name for o in own}
    # What the fleet holds: other replicas as listed, this deployment's as it observed them.
    holdings = [h for h in holdings if h.deployment != request.key or h.name not in mine]
    holdings += [o.holding for o in own]
    per_node = {n: v.accelerator_per_node for n, v in class_views.items() if v.accelerator_per_node is not None}
    # Only pools that can take new replicas, or host this deployment's, need their capacity counted.
    hosting = {o.holding.cluster for o in own} | {h.cluster for h in existing.going.values() if h is not None}
    counted = [
        i
        for i in infos.values()
        if i.name in hosting or (i.ready and not i.cordoned and request.selector.matches(i.labels))
    ]
    free = free_nodes(pool_specs(counted, per_node), holdings, exclude_deployment=request.key)
    judge = ClassJudge(matcher, class_views)
    decided = _keep_existing(judge, request, strategy, own, infos, existing)
    # Replicas that cannot be read hold their GPUs; the fleet's copy of one says which.
    taken = [*unmanaged, *shadows]
    kept, add = _wave(decided, strategy, request.replicas, None, existing)
    run = _Scheduler(request, list(infos.values()), judge, dict(free))
    outcome = _place(run, kept, add, own, taken, existing)
    fallback = ""
    if _falls_back(decided, kept, add, outcome[0], strategy, request.replicas - len(existing.opaque)):
        # No surge replica fits anywhere: roll in place, one replica at a time.
        kept, add = _wave(decided, strategy, request.replicas, 1, existing)
        run = _Scheduler(request, list(infos.values()), judge, dict(free))
        outcome = _place(run, kept, add, own, taken, existing)
        unplaced = outcome[1]
        why = f"{unplaced[0].reason}: {unplaced[0].message}" if unplaced else "no capacity"
        fallback = f"no surge replica can be placed ({why}): updating in place, one replica at a time"
    why_stuck = outcome[1][0] if outcome[1] else None
    retried = _leaving_retired(kept, outcome[1])
    if retried:
        # A leaving replica retired within maxUnavailable whose replacement fits nowhere would only be lost: keep it.
        kept, add = _wave(decided, strategy, request.replicas, None, existing, retire_leaving=False)
        run = _Scheduler(request, list(infos.values()), judge, dict(free))
        outcome = _place(run, kept, add, own, taken, existing)
    pending: tuple[Pending, ...] = ()
    if outcome[1] and (kept.retired or kept.removed):
        # GPUs that this deployment's own retirements release are free by a later call: a replica that
        # fits then waits for them (progress), it is not unplaced.
        released = _Scheduler(request, list(infos.values()), judge, dict(free))
        freed = _place(released, kept, add, own, taken, existing, release=True)
        pending = _pending(outcome[0], freed[0], kept)
        outcome = (outcome[0], freed[1], freed[2])
    # Leaving replicas that cannot move: say why (their replacement's reason).
    blocked = _blocked(why_stuck) if why_stuck is not None and (retried or (outcome[1] and kept.leaving)) else ""
    placements, unplaced, shortfall = outcome
    placements = _with_states(placements, kept, own)
    rollout = _summary(existing.revision, placements, kept, own, fallback, paused=strategy.paused)
    rollout = replace(rollout, pending=pending, blocked=blocked)
    return Schedule(
        deployment=request.key,
        desired=request.replicas,
        placements=tuple(sorted(placements, key=lambda p: p.ordinal)),
        unplaced=tuple(unplaced),
        removed=tuple(o.name for o in kept.removed),
        unmanaged=tuple(h.name for h in unmanaged),
        shortfall=shortfall,
        retired=tuple(o.name for o in sorted(kept.retired, key=lambda o: o.ordinal)),
        waiting=kept.waiting,
        rollout=rollout if existing.revision else None,
        pending=pending,
        serving=frozenset(o.name for o in own if o.holding.ready),
    )


def _pending(placed: Sequence[Placement], freed: Sequence[Placement], kept: _Kept) -> tuple[Pending, ...]:
    """The new replicas that fit only once the retired and removed replicas' GPUs are released."""
    have = {p.ordinal for p in placed}
    releasing = sorted((*kept.retired, *kept.removed), key=lambda o: o.ordinal)
    out = []
    for p in sorted(freed, key=lambda p: p.ordinal):
        if p.ordinal in have or p.origin is Origin.KEPT:
            continue
        there = tuple(o.name for o in releasing if o.holding.cluster == p.cluster)
        out.append(Pending(p.replica, p.ordinal, p.cluster, there or tuple(o.name for o in releasing)))
    return tuple(out)


def _leaving_retired(kept: _Kept, unplaced: Sequence[Unplaced]) -> bool:
    """Whether this wave retires a leaving replica while a replacement cannot be placed."""
    return bool(unplaced) and any(o.ordinal not in kept.old for o in kept.retired)


def _blocked(unplaced: Unplaced) -> str:
    return f"no replacement can be placed ({unplaced.reason}: {unplaced.message})"


def _lost(o: _Own, existing: Existing, after: float | None, replaced: frozenset[str]) -> str:
    """Why ``o``'s cluster counts as lost past the failover grace; "" when it does not (or failover is off)."""
    lost = existing.lost.get(o.holding.cluster)
    if lost is None or after is None:
        return ""
    seconds, why = lost
    if seconds < after and o.name not in replaced:
        return ""
    return f"InferenceCluster {o.holding.cluster} {why} for longer than spec.failover.after ({int(after)}s)"


def _keep_existing(
    judge: ClassJudge,
    request: _Request,
    strategy: Strategy,
    own: Sequence[_Own],
    infos: Mapping[str, ClusterInfo],
    existing: Existing,
) -> _Kept:
    """Decide each existing replica's placement, which are leaving or lost, and which scaling down removes."""
    replaced = frozenset(o.holding.replaces for o in own if o.holding.replaces)
    kept = {
        o.ordinal: keep(
            o.name,
            o.ordinal,
            o.holding,
            infos.get(o.holding.cluster),
            unreadable=existing.unreadable,
            deleting=existing.deleting,
            requests=request.roles,
            judge=judge,
            selector=request.selector,
            changed=not existing.revision or o.holding.revision != existing.revision,
            draining=existing.draining,
            lost=_lost(o, existing, strategy.failover_after, replaced),
        )
        for o in own
    }
    leaving = [o for o in own if (p := kept[o.ordinal]) is not None and p.held is not None and p.held.leaving]
    lost = [o for o in own if (p := kept[o.ordinal]) is not None and p.held is not None and p.held.lost]
    counting = [o for o in own if o not in leaving and o not in lost]
    old = frozenset(o.ordinal for o in own if existing.revision and o.holding.revision != existing.revision)
    # While old replicas remain, a rollout may run maxSurge replicas beyond spec.replicas.
    allowance = strategy.max_surge if any(o.ordinal in old for o in counting) else 0
    removed = _scale_down(counting, kept, request.replicas - len(existing.opaque) + allowance, infos, old)
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
    return _Kept(kept, leaving, removed, staying, waiting, lost, old, unsettled=unknown)


def _wave(
    decided: _Kept,
    strategy: Strategy,
    replicas: int,
    in_place_unavailable: int | None,
    existing: Existing,
    *,
    retire_leaving: bool = True,
) -> tuple[_Kept, int]:
    """Apply one wave (``modelplane.scheduling.rollout``): retire, update in place, hold the other old replicas.

    Replicas that cannot be read hold their slots and count as not Ready; while a retirement would
    hang on an unknown input (``_Kept.unsettled``), nothing is retired: the rollout shows it in progress.
    """
    current: list[Member] = []
    old: list[Member] = []
    for o in [*decided.staying, *decided.leaving]:
        placement = decided.placements[o.ordinal]
        leaving = o in decided.leaving
        # A replica that changes shape kind is placed again under its name: an in-place update too.
        in_place = placement is None or placement.held is None
        member = Member(o.ordinal, o.holding.ready, leaving=leaving, in_place=in_place)
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
    )
    placements = dict(decided.placements)
    for o in decided.staying:
        if o.ordinal not in decided.old or o.ordinal in step.in_place:
            continue
        placement = placements[o.ordinal]
        if placement is not None and placement.held is not None:
            continue  # held for a reason of its own (an input, or the new shape cannot run there)
        why = f"it runs revision {o.holding.revision or 'unknown'} and waits for its wave of the rollout"
        placements[o.ordinal] = Placement(
            o.name, o.ordinal, o.holding.cluster, observed_roles(o.holding), Origin.KEPT,
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


def _place(  # noqa: PLR0913 - one scheduling pass over what exists
    run: _Scheduler,
    kept: _Kept,
    add: int,
    own: Sequence[_Own],
    unmanaged: Sequence[Holding],
    existing: Existing,
    *,
    release: bool = False,
) -> tuple[list[Placement], list[Unplaced], int]:
    """Account for what exists, then place the replicas to place again and ``add`` new ones.

    With ``release``, the replicas retired or removed now hold no GPUs (as on a later call).
    """
    placements = _hold_existing(run, kept, unmanaged, release=release)
    failed = _place_again(run, kept, placements)
    used = {o.ordinal for o in own} | existing.opaque | set(existing.going)
    unplaced, shortfall = _place_new(run, add, used, failed, placements)
    placements += [p for o in (*kept.leaving, *kept.lost) if (p := kept.placements[o.ordinal]) is not None]
    return placements, unplaced, shortfall


def _falls_back(
    decided: _Kept, kept: _Kept, add: int, placements: Sequence[Placement], strategy: Strategy, replicas: int
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


def _with_states(placements: Sequence[Placement], kept: _Kept, own: Sequence[_Own]) -> list[Placement]:
    """Each placement's state, and for replacements of lost replicas which they replace."""
    moving = bool(kept.old & {o.ordinal for o in kept.staying}) or bool(kept.leaving) or bool(kept.lost)
    lost = sorted(o.name for o in kept.lost)
    by_ordinal = {o.ordinal: o for o in own}
    carried = {o.holding.replaces for o in own if o.holding.replaces in lost}
    fresh = iter([name for name in lost if name not in carried])
    out = []
    for p in sorted(placements, key=lambda p: p.ordinal):
        o = by_ordinal.get(p.ordinal)
        replaces = o.holding.replaces if o is not None and o.holding.replaces in lost else ""
        if p.origin is Origin.NEW and not replaces:
            replaces = next(fresh, "")
        out.append(replace(p, state=_state(p, kept, moving=moving), replaces=replaces))
    return out


def _state(p: Placement, kept: _Kept, *, moving: bool) -> State:
    if p.held is not None:
        if p.held.leaving:
            return State.LEAVING
        if p.held.lost:
            return State.LOST
        return State.OUTDATED if p.held.reason is HoldReason.OUTDATED else State.HELD
    if p.ordinal in kept.in_place:
        return State.UPDATING
    return State.SURGE if p.origin is Origin.NEW and moving else State.CURRENT


def _summary(
    revision: str, placements: Sequence[Placement], kept: _Kept, own: Sequence[_Own], fallback: str, *, paused: bool
) -> Rollout:
    ready = {o.ordinal for o in own if o.holding.ready}
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
        fallback=fallback,
        paused=paused,
    )


def _hold_existing(
    run: _Scheduler, kept: _Kept, unmanaged: Sequence[Holding], *, release: bool = False
) -> list[Placement]:
    """Account for what exists; return the kept placements, held at their shape where a new one does not fit.

    A replica whose shape changed takes the new shape in place of its old one
    only if its pools have room for it after every other replica, those held at
    their old shape included; the check is repeated until no more are held.
    """
    for o in () if release else (*kept.removed, *kept.retired):  # Still running until deleted.
        run.hold(o.holding.cluster, ((r.pool, r.footprint) for r in o.holding.roles), own=False)
    for h in unmanaged:
        run.hold(h.cluster, ((r.pool, r.footprint) for r in h.roles), own=bool(h.roles))
    # Kept replicas in ordinal order, as they were placed: a re-run rebuilds the same nodes.
    staying = [(o, p) for o in kept.staying if (p := kept.placements[o.ordinal]) is not None]
    reshaped = {o.ordinal for o, p in staying if p.held is None and p.roles != observed_roles(o.holding)}
    start = run.snapshot()
    held: set[int] = set()
    while True:
        for o, _ in staying:
            if o.ordinal not in reshaped or o.ordinal in held:
                run.hold(o.holding.cluster, ((r.pool, r.footprint) for r in o.holding.roles), own=False)
        short = [
            o.ordinal
            for o, p in staying
            if o.ordinal in reshaped - held
            and not run.hold(p.cluster, [(r.pool, r.footprint) for r in p.roles], own=False, strict=True)
        ]
        if not short:
            break
        held.update(short)
        run.restore(start)
    for _, p in staying:
        run.count(p.cluster)
    return [_shape_held(p, o.holding) if o.ordinal in held else p for o, p in staying]


def _place_again(run: _Scheduler, kept: _Kept, placements: list[Placement]) -> Unplaced | None:
    """Place the replicas that changed shape kind; one that does not fit stays where it is, held.

    Returns the first failure: new replicas of the same shape would fail alike.
    """
    failed: Unplaced | None = None
    for o in kept.staying:
        if kept.placements[o.ordinal] is not None:
            continue
        outcome = run.place(o.name, o.ordinal, Origin.MOVED) if failed is None else replace(failed, replica=o.name)
        if isinstance(outcome, Placement):
            placements.append(outcome)
            continue
        failed = failed or outcome
        held = Held(HoldReason(str(outcome.reason)), f"it cannot be placed again: {outcome.message}")
        placements.append(
            Placement(o.name, o.ordinal, o.holding.cluster, observed_roles(o.holding), Origin.KEPT, held=held)
        )
    return failed


def _place_new(
    run: _Scheduler, wanted: int, used: set[int], failed: Unplaced | None, placements: list[Placement]
) -> tuple[list[Unplaced], int]:
    """Place up to ``wanted`` new replicas at the lowest unused ordinals; return the unplaced and the shortfall.

    Stops at the first that does not fit (replicas share one shape and capacity only
    shrinks): the rest are counted, and the first ``LISTED`` named.
    """
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
