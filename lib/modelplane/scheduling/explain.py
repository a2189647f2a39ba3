"""Why the scheduler places a ModelDeployment's replicas where it does, check by check.

``explain`` runs the scheduler's placement engine (``modelplane.scheduling.placer.Placer``)
on the same ``FleetView``, for the deployment's replicas as if none existed yet, and
records what each one saw:

1. per cluster: whether ``clusterSelector`` matches, whether it is cordoned, drains,
   is being deleted, and whether it is Ready;
2. per pool and role: the class (found, valid), the node selector's CEL
   (and ``devices``), the topology against the class's GPUs per node, the
   pool's node count, the GPUs free before and after one replica, and on how
   many of its nodes a worker fits;
3. per replica, in ordinal order: every cluster that could take it, with the
   score that decides (with ``CostOptimized`` or ``CarbonAware`` the replica's cost or
   emissions per hour first, then spread, then best fit, then the GPUs left, then the
   name), and the winner with the part of the score that beat the runner-up
   (``modelplane.scheduling.decision``), or why none could take it.

With ``spec.modelCacheRef`` the scheduler is given the clusters whose copy of the ModelCache is
Ready (``cached``, ranked after the cost and before spread); ``explain`` is given the cache as
read (``modelplane.modelcache.use.CacheCopy``), takes that same set from it, and records each
cluster's copy and, per replica, what the replica does with the copy on its cluster
(``modelplane.modelcache.use.cache_use``: mounts it, waits for it with policy Required, or starts
without it with Preferred). Neither policy makes a cluster ineligible: a Required replica placed
where the copy is not Ready is composed there, so the copy is staged, and waits (CacheNotReady).

With the FleetQuotas of the deployment's namespace (``quotas``) the placer is given the same
quota gate as in ``schedule`` (``modelplane.scheduling.gate``: each limit's published use less
the deployment's own, what lower priorities hold that its priority may take) and the pools where
lower priorities not serving yet would give way: a cluster whose pools have room that a quota
refuses is ``QuotaExceeded`` with the quota's figures, as the deployment's ``Scheduled`` says, and
``quotas`` lists each limit as the placement started from it.

Placing a replica changes the free capacity the next one sees, exactly as in
``schedule``. Existing replicas are sticky there and are not re-decided here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from modelplane.capacity import Occupancy
from modelplane.capacity.clusters import ClusterInfo
from modelplane.modelcache.use import CacheCopy, CacheRef, Policy, cache_use
from modelplane.names import replica_name
from modelplane.scheduling.costs import objective_of
from modelplane.scheduling.decision import Score
from modelplane.scheduling.devices import PoolReason, RoleRequest
from modelplane.scheduling.gate import QuotaGate
from modelplane.scheduling.labels import cluster_selector_text
from modelplane.scheduling.placement import Origin, Placement
from modelplane.scheduling.placer import Placer
from modelplane.scheduling.quotas import Quotas
from modelplane.scheduling.rejection import ClusterRejection, RejectReason, Unplaced
from modelplane.scheduling.request import request_of
from modelplane.scheduling.revision import cache_mount
from modelplane.scheduling.view import FleetView
from modelplane_models.model_deployment import ClusterSelector, ModelDeployment

# Which check a pool misfit fails.
_CHECK_OF = {
    PoolReason.CLASS_NOT_FOUND: "class",
    PoolReason.INVALID_CLASS: "class",
    PoolReason.SELECTOR_MISMATCH: "cel",
    PoolReason.CEL_ERROR: "cel",
    PoolReason.DEVICES_MISSING: "cel",
    PoolReason.TOPOLOGY_EXCEEDS_NODE: "topology",
    PoolReason.TOO_FEW_NODES: "nodes",
}


@dataclass(frozen=True)
class PoolCheck:
    """One pool judged for one role.

    Attributes:
        pool: The pool.
        role: unified, prefill or decode.
        class_name: Its InferenceClass.
        failed: The check that failed ("class", "cel", "topology", "nodes", "capacity"), or "" when it fits.
        reason: The scheduler's reason for the failure ("" when it fits).
        message: The scheduler's message for the failure ("" when it fits).
        free_before: GPUs free before one replica's role is placed (None: capacity unknown).
        free_after: GPUs free after it (None: it does not fit).
        nodes_fit: Nodes of the pool on which one worker of the role fits now.
    """

    pool: str
    role: str
    class_name: str
    failed: str
    reason: str
    message: str
    free_before: int | None
    free_after: int | None
    nodes_fit: int | None


NO_COPY = "-"
"""A cluster's ``ClusterCheck.cache`` when the ModelCache lists no copy there (or does not exist)."""


@dataclass(frozen=True)
class CacheRank:
    """The deployment's ModelCache (``spec.modelCacheRef``) as the scheduler ranks by it.

    Attributes:
        name: The ModelCache's name (in the deployment's namespace).
        policy: Required (a replica placed where the copy is not Ready waits for it) or Preferred
            (it starts without it).
        found: Whether the ModelCache exists (not found: no cluster is Ready, so none ranks first).
        ready: The clusters whose copy is Ready, sorted: the scheduler's ``cached``.
    """

    name: str
    policy: str
    found: bool
    ready: tuple[str, ...]


@dataclass(frozen=True)
class ClusterCheck:
    """One cluster judged: its cluster-level checks, its pools, and the verdict.

    ``cache`` is the phase of the ModelCache's copy there (``NO_COPY`` when none is listed; "" when
    the deployment references no cache), ``cache_message`` its status message.
    """

    cluster: str
    selected: bool
    cordoned: bool
    draining: bool
    deleting: bool
    ready: bool
    not_ready: str
    verdict: str  # "eligible", or the scheduler's reason
    message: str
    pools: tuple[PoolCheck, ...]
    cache: str = ""
    cache_message: str = ""


@dataclass(frozen=True)
class Step:
    """The placement of one replica: the candidates, in score order, and the winner (or why none)."""

    replica: str
    candidates: tuple[Score, ...]  # every cluster that could take it, lowest (winning) score first
    chosen: str  # the winning cluster, "" when unplaced
    reason: str  # when unplaced: the scheduler's reason
    before: tuple[tuple[str, str, int], ...]  # (cluster, pool, free GPUs) on the winner's pools before
    after: tuple[tuple[str, str, int], ...]  # ... and after
    decided_by: str = ""  # the part of the score that beat the runner-up (``DecidedBy``); "" when unplaced
    why: str = ""  # ... said with the figures
    waits: str = ""  # policy Required, the copy on the winner not Ready: why the replica waits (CacheNotReady)
    unmounted: str = ""  # policy Preferred (or no claim to mount): why it starts without the copy
    message: str = ""  # when unplaced: the scheduler's message (a quota's figures with QuotaExceeded)
    preempts: str = ""  # placed where nothing had room, in the place of whose replicas of a lower priority


@dataclass(frozen=True)
class Explanation:
    """Why a deployment's replicas go where they go."""

    deployment: str  # namespace/name
    selector: str
    roles: tuple[str, ...]  # e.g. "unified: 1 worker of 1 node x 4 GPUs"
    clusters: tuple[ClusterCheck, ...]
    steps: tuple[Step, ...]
    strategy: str = ""  # how new replicas are placed when not by Spread: the PlacementStrategy condition's message
    unit: str = ""  # the unit of the candidates' cost ("USD/h", "gCO2/h"); "" when they have none
    cache: CacheRank | None = None  # spec.modelCacheRef, ranked by; None when the deployment references none
    # Each limit of the namespace's FleetQuotas as the placement started from it (``quota_lines``).
    quotas: tuple[str, ...] = ()


def _describe(request: RoleRequest) -> str:
    fp = request.footprint
    return f"{request.role}: {fp.workers} worker(s) of {fp.nodes_per_worker} node(s) x {fp.gpus_per_node} GPU(s)"


def _pool_check(run: Placer, cluster: ClusterInfo, pool_name: str, class_name: str, request: RoleRequest) -> PoolCheck:
    fit = run.judge.fit(request, class_name)
    free = run.free((cluster.name, pool_name))
    fp = request.footprint
    before = free.free if free is not None else None
    nodes_fit = sum(free.counts[fp.gpus_per_node :]) if free is not None and fp.gpus_per_node <= free.per_node else 0
    after = None
    if free is not None and fit.misfit is None and free.fits(fp):
        after = free.free - fp.total_gpus
    failed, reason, message = "", "", ""
    if fit.misfit is not None:
        failed, reason, message = _CHECK_OF.get(fit.misfit, "class"), str(fit.misfit), fit.message
    elif free is not None and free.nodes < fp.nodes_per_worker:
        failed, reason = "nodes", str(PoolReason.TOO_FEW_NODES)
        message = f"a worker spans {fp.nodes_per_worker} nodes; the pool has {free.nodes}"
    elif free is None:
        failed, reason, message = "capacity", "CapacityUnknown", "the pool's class has no accelerator count"
    elif after is None:
        failed, reason = "capacity", str(PoolReason.INSUFFICIENT_CAPACITY)
        message = (
            f"{fp.total_gpus} GPUs needed ({fp.gpus_per_node} per node), {free.free} free, "
            f"{nodes_fit} node(s) with room"
        )
    return PoolCheck(pool_name, str(request.role), class_name, failed, reason, message, before, after, nodes_fit)


def _copy(cache: CacheCopy | None, cluster: str) -> tuple[str, str]:
    """The phase and message of the cache's copy on ``cluster`` (``NO_COPY`` when it lists none)."""
    if cache is None:
        return NO_COPY, ""
    return cache.clusters.get(cluster, (NO_COPY, ""))


def _cluster_check(run: Placer, cluster: ClusterInfo, copy: tuple[str, str]) -> ClusterCheck:
    selected = run.request.selector.matches(cluster.labels)
    pools = tuple(
        _pool_check(run, cluster, pool.name, pool.class_name, request)
        for request in run.request.roles
        for pool in cluster.pools
    )
    if not selected:
        labels = ", ".join(f"{k}={v}" for k, v in sorted(cluster.labels.items())) or "no labels"
        verdict, message = "NotSelected", f"clusterSelector does not match its labels ({labels})"
    else:
        eligible = run.eligible(cluster)
        if isinstance(eligible, ClusterRejection):
            verdict, message = str(eligible.reason), eligible.message
        elif run.option(cluster) is None:
            # Room a quota refuses says so with the figures, as the scheduler's own rejection does.
            rejection = run.rejection(cluster)
            if rejection.reason is RejectReason.QUOTA_EXCEEDED:
                verdict, message = str(rejection.reason), rejection.message
            else:
                verdict, message = "InsufficientCapacity", "no combination of its pools fits a replica now"
        else:
            verdict, message = "eligible", ""
    return ClusterCheck(
        cluster=cluster.name,
        selected=selected,
        cordoned=cluster.cordoned,
        draining=cluster.draining,
        deleting=cluster.deleting,
        ready=cluster.ready,
        not_ready=cluster.not_ready,
        verdict=verdict,
        message=message,
        pools=pools,
        cache=copy[0],
        cache_message=copy[1],
    )


def _cache_ref(deployment: ModelDeployment) -> CacheRef | None:
    """``spec.modelCacheRef`` with its defaults, as each replica is written it (None without one)."""
    ref = deployment.spec.modelCacheRef if deployment.spec is not None else None
    if ref is None:
        return None
    mount: dict[str, Any] = cache_mount(ref.model_dump(exclude_none=True))
    return CacheRef(mount["name"], mount["mountPath"], Policy(mount["policy"]))


def explain(
    deployment: ModelDeployment,
    fleet: FleetView,
    *,
    own: Iterable[Occupancy] = (),
    cache: CacheCopy | None = None,
    quotas: Quotas | None = None,
) -> Explanation:
    """Explain where ``deployment``'s replicas go on a fleet, as ``schedule`` would place them afresh.

    Args:
        deployment: The ModelDeployment.
        fleet: The fleet, as ``schedule`` reads it.
        own: The deployment's replicas the fleet's pools may count: they hold nothing here
            (placed afresh); every other replica holds its GPUs.
        cache: The ModelCache ``spec.modelCacheRef`` names, as read (``copy_of``); None when it is not
            found. Its Ready copies (``CacheCopy.ready``) are the ``cached`` clusters ``schedule`` is
            given. Ignored when the deployment references no cache.
        quotas: The FleetQuotas of the deployment's namespace and its priority, as ``schedule`` is
            given them (None: no quota applies).

    Raises:
        InvalidDeploymentError: The deployment has no name, no serving shape or an invalid topology.
    """
    request = request_of(deployment)
    resolved = objective_of(request.policy, request.selector, fleet.clusters, fleet.classes)
    published = fleet.free_for(request.key, own)
    ref = _cache_ref(deployment)
    # What compose-model-deployment gives ``schedule``: the Ready copies; none when the cache is not found.
    cached = None if ref is None else (cache.ready if cache is not None else frozenset())
    quotas = quotas or Quotas()
    clusters, judge = fleet.cluster_list(), fleet.judge()
    gate = QuotaGate.of(quotas, request.key, clusters, judge)
    lines = quota_lines(gate)
    run = Placer(
        request,
        clusters,
        judge,
        published,
        objective=resolved.objective,
        cached=cached,
        gate=gate,
        preemptible=fleet.preemptible(quotas.priority),
        preemptible_serving=fleet.preemptible_serving(quotas.priority),
    )
    checks = tuple(_cluster_check(run, c, _copy(cache, c.name) if ref else ("", "")) for c in run.clusters)
    steps = []
    for ordinal in range(request.replicas):
        name = replica_name(request.key.name, ordinal)
        candidates = tuple(score for score, _ in run.candidates())
        snapshot = run.snapshot()
        outcome = run.place(name, ordinal, Origin.NEW)
        if isinstance(outcome, Placement) and outcome.decision is not None:
            keys = list(dict.fromkeys((outcome.cluster, r.pool) for r in outcome.roles))
            before = tuple((c, p, snapshot.free[c, p].free) for c, p in keys)
            after = tuple((c, p, free.free) for c, p in keys if (free := run.free((c, p))) is not None)
            # The placement's own decision: the table and the reason are the scheduler's.
            decision = outcome.decision
            # What the replica does with the copy there, decided as compose-model-replica decides it.
            use = cache_use(ref, cache, outcome.cluster, started=False, mounted=False) if ref else None
            steps.append(
                Step(
                    name,
                    candidates,
                    outcome.cluster,
                    "",
                    before,
                    after,
                    str(decision.decided_by),
                    decision.message,
                    waits=use.waiting if use else "",
                    unmounted=use.unmounted if use else "",
                    preempts=_preempts(outcome),
                )
            )
        elif isinstance(outcome, Unplaced):
            # Each cluster's own reason is in ``clusters``: the scheduler's one-line summary would abbreviate them.
            steps.append(Step(name, candidates, "", str(outcome.reason), (), (), message=outcome.message))
            break  # replicas share one shape and capacity only shrinks: the rest fail alike
    selector = deployment.spec.clusterSelector if deployment.spec is not None else None
    return Explanation(
        deployment=f"{request.key.namespace}/{request.key.name}",
        selector=_selector_text(selector),
        roles=tuple(_describe(r) for r in request.roles),
        clusters=checks,
        steps=tuple(steps),
        strategy=resolved.note.message if resolved.note is not None else "",
        unit=resolved.objective.unit if resolved.objective is not None else "",
        cache=None
        if ref is None
        else CacheRank(ref.name, str(ref.policy), cache is not None, tuple(sorted(cached or ()))),
        quotas=lines,
    )


def _preempts(placement: Placement) -> str:
    """Whose place a replica that fitted nowhere takes, as the scheduler's event says it; "" when it fitted."""
    if placement.preempts_serving:
        return (
            "nothing had room: in the place of serving replicas of a lower priority whose FleetQuota allows"
            " preemption LowerPriority (they move surge-first; it waits for their GPUs)"
        )
    if placement.preempts:
        return "nothing had room: in the place of replicas of a lower priority not serving yet (they move)"
    return ""


def quota_lines(gate: QuotaGate | None) -> tuple[str, ...]:
    """Each limit a placement starts from: ``FleetQuota team-a: 16 nvidia-h100-8 accelerators, 8 in use by others``.

    "By others": the quota's published use less this deployment's own replicas, which explain places afresh.
    """
    if gate is None:
        return ()
    out = []
    for key in sorted(gate.limits):
        quota, limit = gate.limits[key]
        line = f"FleetQuota {quota.name}: {limit.accelerators} {limit.what}, {gate.in_use[key]} in use by others"
        if gate.preemptible[key]:
            line += f" ({gate.preemptible[key]} of it by lower priorities, which this priority may take)"
        out.append(line)
    return tuple(out)


def _selector_text(selector: ClusterSelector | None) -> str:
    return cluster_selector_text(selector) or "every cluster"
