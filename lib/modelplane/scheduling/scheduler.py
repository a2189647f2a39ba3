"""The fleet scheduler: where each replica of a ModelDeployment runs.

Per replica, in ordinal order:

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
   the fewest free GPUs left in the pools used (best fit), then cluster and pool
   names (ties).

Existing replicas are sticky: one keeps its placement while its cluster exists
and still has the pools it runs on, even if the cluster is now cordoned or not
Ready or capacity shrank (never reshuffle what runs). If the spec changed so
that the placement no longer satisfies it (clusterSelector, node selector or
topology), it stays too but is reported ``stale`` (as Kubernetes ignores node
affinity during execution). Only a replica whose cluster or pool is gone (or
whose shape changed between unified and disaggregated) is placed again, under
the same name.

Replicas are named ``modelplane.scheduling.names.replica_name(deployment,
ordinal)``. Scaling up adds the lowest unused ordinals; scaling down removes,
in order: replicas whose placement is gone, then stale ones, then those on
cordoned or not-Ready clusters, then the highest ordinals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import product

from modelplane.capacity import DeploymentKey, Holding, NodeFree, PoolKey
from modelplane.capacity.clusters import ClusterInfo
from modelplane.capacity.pools import as_cluster_info, as_holding, free_nodes, pool_specs
from modelplane.problems import Problem
from modelplane.scheduling.celmatch import match_cel
from modelplane.scheduling.devices import (
    ClassJudge,
    ClassView,
    DeviceMatcher,
    DeviceRequest,
    PoolReason,
    RoleRequest,
    class_view,
)
from modelplane.scheduling.labels import LabelSelector, label_selector
from modelplane.scheduling.names import replica_name, replica_ordinal
from modelplane.scheduling.result import (
    ClusterRejection,
    Origin,
    Placement,
    PoolRejection,
    Reason,
    RolePlacement,
    Schedule,
    Unplaced,
    summarize,
)
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
    return _Request(key, replicas, label_selector(spec.clusterSelector), tuple(roles))


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

    def hold(self, cluster: str, roles: Iterable[tuple[str, Footprint]], *, own: bool) -> None:
        """Account for a replica that exists (it may not fit: existing replicas are never refused)."""
        # In the order ``_best_option`` takes them, so a kept replica leaves the nodes as placing it did.
        for pool, fp in sorted(roles, key=lambda r: _size(r[1])):
            key = (cluster, pool)
            if key in self._free:
                self._free[key], _ = self._free[key].hold(fp)
        self._options.pop(cluster, None)
        if own:
            self._spread[cluster] += 1

    def place(self, name: str, ordinal: int, origin: Origin) -> Placement | Unplaced:
        """Place one replica, or say why it cannot be placed."""
        best: tuple[tuple[int, int, int, str, tuple[PoolKey, ...]], _Option] | None = None
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
                best = (score, option)
        if best is None:
            rejections = tuple(self._rejection(cluster) for cluster in self._selected)
            reason, message = summarize(rejections, len(self._clusters))
            return Unplaced(name, ordinal, reason, message, len(self._clusters), rejections)
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
        return Placement(name, ordinal, cluster_name, roles, origin)

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


# Misfits that prove a kept placement no longer satisfies the spec (not an error or a missing input).
_DEFINITE_MISFITS = frozenset(
    {PoolReason.SELECTOR_MISMATCH, PoolReason.DEVICES_MISSING, PoolReason.TOPOLOGY_EXCEEDS_NODE}
)


def _size(fp: Footprint) -> tuple[int, int]:
    return (-fp.gpus_per_node, -fp.nodes_per_worker)


def _pool_message(rejection: PoolRejection, roles: Sequence[RoleRequest]) -> str:
    role = "" if len(roles) == 1 else f"{rejection.role} "
    return f"{role}pool {rejection.pool}: {rejection.message}"


def _read_replicas(holdings: Iterable[Holding], key: DeploymentKey) -> tuple[list[_Own], list[Holding]]:
    """This deployment's replicas: those named by ordinal, and the others (unmanaged)."""
    own: list[_Own] = []
    unmanaged: list[Holding] = []
    for holding in holdings:
        if holding.deployment != key:
            continue
        ordinal = replica_ordinal(key.name, holding.name)
        if ordinal is None:
            unmanaged.append(holding)
        else:
            own.append(_Own(holding.name, ordinal, holding))
    return sorted(own, key=lambda o: o.ordinal), sorted(unmanaged, key=lambda h: h.name)


def _placement(own: _Own, run: _Scheduler, clusters: Mapping[str, ClusterInfo]) -> Placement | None:
    """The placement ``own`` keeps (possibly stale), or None when its cluster, pool or shape is gone."""
    holding, requests = own.holding, run.request.roles
    cluster = clusters.get(holding.cluster)
    if cluster is None or [r.role for r in holding.roles] != [r.role for r in requests]:
        return None
    classes = {p.name: p.class_name for p in cluster.pools}
    if any(r.pool not in classes for r in holding.roles):
        return None
    roles = tuple(RolePlacement(r.role, h.pool, r.footprint) for r, h in zip(requests, holding.roles, strict=True))
    stale = [] if run.request.selector.matches(cluster.labels) else ["the cluster no longer matches clusterSelector"]
    for request, role in zip(requests, roles, strict=True):
        fit = run.judge.fit(request, classes[role.pool])
        if fit.misfit in _DEFINITE_MISFITS:
            stale.append(_pool_message(PoolRejection(role.pool, role.role, fit.misfit, fit.message), requests))
    return Placement(own.name, own.ordinal, holding.cluster, roles, Origin.KEPT, "; ".join(stale))


def _scale_down(
    own: Sequence[_Own], kept: Mapping[int, Placement | None], replicas: int, clusters: Mapping[str, ClusterInfo]
) -> list[_Own]:
    """The replicas beyond ``replicas``: gone, stale, on unschedulable clusters, not Ready, then the highest ordinals.

    Like a ReplicaSet, a scale-down never removes a serving replica while one that is not serving can go.
    """

    def order(o: _Own) -> tuple[bool, bool, bool, bool, int]:
        placement = kept[o.ordinal]
        cluster = clusters[placement.cluster] if placement is not None else None
        schedulable = cluster is not None and not cluster.cordoned and cluster.ready
        fresh = placement is not None and not placement.stale
        return (placement is not None, fresh, schedulable, o.holding.ready, -o.ordinal)

    return sorted(own, key=order)[: max(0, len(own) - replicas)]


def schedule(
    deployment: ModelDeployment,
    clusters: Iterable[InferenceCluster | ClusterInfo],
    classes: Iterable[InferenceClass],
    replicas: Iterable[ModelReplica | Holding],
    *,
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
        matcher: Evaluates a DRA CEL selector against a device kind; the
            default is the DRA CEL environment (``modelplane.cel``).

    Returns:
        The placements, the replicas left unplaced with why, and the replicas
        scaling down removes.

    Raises:
        InvalidDeploymentError: The deployment has no name, no serving shape or
            an invalid topology.
    """
    request = _request(deployment)
    infos: dict[str, ClusterInfo] = {}
    for info in sorted((i for i in map(as_cluster_info, clusters) if i is not None), key=lambda i: i.name):
        infos.setdefault(info.name, info)
    class_views: dict[str, ClassView] = {}
    for view in sorted((v for v in map(class_view, classes) if v is not None), key=lambda v: v.name):
        class_views.setdefault(view.name, view)
    holdings = [h for h in map(as_holding, replicas) if h is not None]
    own, unmanaged = _read_replicas(holdings, request.key)
    per_node = {n: v.accelerator_per_node for n, v in class_views.items() if v.accelerator_per_node is not None}
    # Only pools that can take new replicas need their capacity counted.
    open_clusters = [i for i in infos.values() if i.ready and not i.cordoned and request.selector.matches(i.labels)]
    free = free_nodes(pool_specs(open_clusters, per_node), holdings, exclude_deployment=request.key)
    run = _Scheduler(request, list(infos.values()), ClassJudge(matcher, class_views), free)

    kept = {o.ordinal: _placement(o, run, infos) for o in own}
    removed = _scale_down(own, kept, request.replicas, infos)
    staying = [o for o in own if o not in removed]

    for o in removed:  # Still running until deleted.
        run.hold(o.holding.cluster, ((r.pool, r.footprint) for r in o.holding.roles), own=False)
    for h in unmanaged:
        run.hold(h.cluster, ((r.pool, r.footprint) for r in h.roles), own=bool(h.roles))
    # Kept replicas in ordinal order, as they were placed: a re-run rebuilds the same nodes.
    placements = [p for o in staying if (p := kept[o.ordinal]) is not None]
    for p in placements:
        run.hold(p.cluster, ((r.pool, r.footprint) for r in p.roles), own=True)

    used = {o.ordinal for o in staying}
    new = [i for i in range(request.replicas + len(used)) if i not in used][: request.replicas - len(staying)]
    to_place = sorted(
        [(o.ordinal, o.name, Origin.MOVED) for o in staying if kept[o.ordinal] is None]
        + [(i, replica_name(request.key.name, i), Origin.NEW) for i in new]
    )
    unplaced: list[Unplaced] = []
    for ordinal, name, origin in to_place:
        if unplaced:
            # Replicas share one shape and capacity only shrinks: after one fails, the rest fail alike.
            unplaced.append(replace(unplaced[0], replica=name, ordinal=ordinal))
            continue
        outcome = run.place(name, ordinal, origin)
        if isinstance(outcome, Placement):
            placements.append(outcome)
        else:
            unplaced.append(outcome)
    return Schedule(
        deployment=request.key,
        desired=request.replicas,
        placements=tuple(sorted(placements, key=lambda p: p.ordinal)),
        unplaced=tuple(unplaced),
        removed=tuple(o.name for o in removed),
        unmanaged=tuple(h.name for h in unmanaged),
    )
