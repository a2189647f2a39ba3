"""Why the scheduler places a ModelDeployment's replicas where it does, check by check.

``explain`` runs the scheduler's own predicates and scoring (``scheduler._Scheduler``)
on a fleet, for the deployment's replicas as if none existed yet, and records
what each one saw:

1. per cluster: whether ``clusterSelector`` matches, whether it is cordoned,
   whether it is Ready;
2. per pool and role: the class (found, valid), the node selector's CEL
   (and ``devices``), the topology against the class's GPUs per node, the
   pool's node count, the GPUs free before and after one replica, and on how
   many of its nodes a worker fits;
3. per replica, in ordinal order: every cluster that could take it, with the
   score that decides (spread, then best fit, then the GPUs left, then the
   name), and the winner with the part of the score that beat the runner-up
   (``modelplane.scheduling.decision``), or why none could take it.

Placing a replica changes the free capacity the next one sees, exactly as in
``schedule``. Existing replicas are sticky there and are not re-decided here.
The scheduler's private run is used on purpose: the explanation must be its
decision, not a second implementation of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from modelplane.capacity import Holding, NodeFree
from modelplane.capacity.clusters import ClusterInfo
from modelplane.capacity.pools import as_cluster_info, as_holding, free_nodes, pool_specs
from modelplane.scheduling.celmatch import match_cel
from modelplane.scheduling.decision import Score, decide
from modelplane.scheduling.devices import ClassJudge, ClassView, DeviceMatcher, PoolReason, RoleRequest, class_view
from modelplane.scheduling.names import replica_name
from modelplane.scheduling.result import ClusterRejection, Origin, Placement
from modelplane.scheduling.scheduler import _request, _Scheduler
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica

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


@dataclass(frozen=True)
class ClusterCheck:
    """One cluster judged: its cluster-level checks, its pools, and the verdict."""

    cluster: str
    selected: bool
    cordoned: bool
    ready: bool
    not_ready: str
    verdict: str  # "eligible", or the scheduler's reason
    message: str
    pools: tuple[PoolCheck, ...]


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


@dataclass(frozen=True)
class Explanation:
    """Why a deployment's replicas go where they go."""

    deployment: str  # namespace/name
    selector: str
    roles: tuple[str, ...]  # e.g. "unified: 1 worker of 1 node x 4 GPUs"
    clusters: tuple[ClusterCheck, ...]
    steps: tuple[Step, ...]


def _describe(request: RoleRequest) -> str:
    fp = request.footprint
    return f"{request.role}: {fp.workers} worker(s) of {fp.nodes_per_worker} node(s) x {fp.gpus_per_node} GPU(s)"


def _pool_check(
    run: _Scheduler, cluster: ClusterInfo, pool_name: str, class_name: str, request: RoleRequest
) -> PoolCheck:
    fit = run.judge.fit(request, class_name)
    free: NodeFree | None = run._free.get((cluster.name, pool_name))
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


def _cluster_check(run: _Scheduler, cluster: ClusterInfo) -> ClusterCheck:
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
        eligible = run._eligible_pools(cluster)
        if isinstance(eligible, ClusterRejection):
            verdict, message = str(eligible.reason), eligible.message
        elif run._best_option(eligible) is None:
            verdict, message = "InsufficientCapacity", "no combination of its pools fits a replica now"
        else:
            verdict, message = "eligible", ""
    return ClusterCheck(
        cluster.name, selected, cluster.cordoned, cluster.ready, cluster.not_ready, verdict, message, pools
    )


def _candidates(run: _Scheduler) -> list[Score]:
    out = []
    for cluster in run._selected:
        eligible = run._eligible_pools(cluster)
        if isinstance(eligible, ClusterRejection):
            continue
        option = run._best_option(eligible)
        if option is None:
            continue
        spread = run._spread[cluster.name]
        out.append(Score(spread, option.waste, option.leftover, cluster.name, tuple(k[1] for k in option.pools)))
    return sorted(out)


def explain(
    deployment: ModelDeployment,
    clusters: Iterable[InferenceCluster | ClusterInfo],
    classes: Iterable[InferenceClass],
    replicas: Iterable[ModelReplica | Holding],
    *,
    matcher: DeviceMatcher = match_cel,
) -> Explanation:
    """Explain where ``deployment``'s replicas go on a fleet, as ``schedule`` would place them afresh.

    Args:
        deployment: The ModelDeployment.
        clusters: Every InferenceCluster of the fleet.
        classes: The InferenceClasses.
        replicas: Every ModelReplica of the fleet; the deployment's own hold nothing
            (they are placed afresh), every other one holds its GPUs.
        matcher: The DRA CEL matcher.

    Raises:
        InvalidDeploymentError: The deployment has no name, no serving shape or an invalid topology.
    """
    request = _request(deployment)
    infos: dict[str, ClusterInfo] = {}
    for info in sorted((i for i in map(as_cluster_info, clusters) if i is not None), key=lambda i: i.name):
        infos.setdefault(info.name, info)
    views: dict[str, ClassView] = {}
    for view in sorted((v for v in map(class_view, classes) if v is not None), key=lambda v: v.name):
        views.setdefault(view.name, view)
    # Its own replicas hold nothing here, but the Ready ones still explain GPUs a scheduler observed in use.
    holdings = [h for h in map(as_holding, replicas) if h is not None]
    per_node = {n: v.accelerator_per_node for n, v in views.items() if v.accelerator_per_node is not None}
    free = free_nodes(pool_specs(infos.values(), per_node), holdings, exclude_deployment=request.key)
    run = _Scheduler(request, list(infos.values()), ClassJudge(matcher, views), free)

    checks = tuple(_cluster_check(run, c) for c in infos.values())
    steps = []
    for ordinal in range(request.replicas):
        name = replica_name(request.key.name, ordinal)
        candidates = tuple(_candidates(run))
        snapshot = dict(run._free)
        outcome = run.place(name, ordinal, Origin.NEW)
        if isinstance(outcome, Placement):
            keys = [(outcome.cluster, r.pool) for r in outcome.roles]
            before = tuple((c, p, snapshot[(c, p)].free) for c, p in dict.fromkeys(keys))
            after = tuple((c, p, run._free[(c, p)].free) for c, p in dict.fromkeys(keys))
            # Decided from the candidates as listed, by the scheduler's own rule: the table and the reason agree.
            decision = decide(candidates[0], candidates[1] if len(candidates) > 1 else None)
            step = Step(
                name, candidates, outcome.cluster, "", before, after, str(decision.decided_by), decision.message
            )
            steps.append(step)
        else:
            # Each cluster's own reason is in ``clusters``: the scheduler's one-line summary would abbreviate them.
            steps.append(Step(name, candidates, "", str(outcome.reason), (), ()))
            break  # replicas share one shape and capacity only shrinks: the rest fail alike
    selector = deployment.spec.clusterSelector if deployment.spec is not None else None
    return Explanation(
        deployment=f"{request.key.namespace}/{request.key.name}",
        selector=_selector_text(selector),
        roles=tuple(_describe(r) for r in request.roles),
        clusters=checks,
        steps=tuple(steps),
    )


def _selector_text(selector: object) -> str:
    if selector is None:
        return "every cluster"
    labels = getattr(selector, "matchLabels", None) or {}
    expressions = getattr(selector, "matchExpressions", None) or []
    parts = [f"{k}={v}" for k, v in sorted(labels.items())]
    parts += [f"{e.key} {e.operator} {list(e.values or [])}" for e in expressions]
    return ", ".join(parts) or "every cluster"
