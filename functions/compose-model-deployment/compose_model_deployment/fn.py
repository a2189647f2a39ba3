"""The ModelDeployment function: schedule replicas onto the fleet and compose them.

Each call reads the fleet through required resources (every InferenceCluster and
InferenceClass, whose pools' free capacity each cluster publishes, and only the
deployment's own ModelReplicas) and what the deployment already runs from its own
observed composed resources, asks the pure scheduler where each replica runs,
and composes one ModelReplica per placed replica plus, once a replica reports
where it is reachable, one ModelEndpoint for it. What runs is never
dropped or rewritten for a missing or invalid input or a change that cannot run
there: it is held as it is and the condition says why. A serving replica is only
ever deleted by the user's own change (scaling down, deleting the deployment or
the cluster it runs on, and then only once its replacement is Ready).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf.struct_pb2 import Struct

from compose_model_deployment.cache import CACHE, Cache, cache_ref, read_cache, request_cache
from compose_model_deployment.cache_status import cache_condition, engine_warnings, waiting_replicas
from compose_model_deployment.desired import Deployment, ReplicaRouting, write_desired
from compose_model_deployment.fleet import REQUIREMENTS, FleetReader, request_requirements
from compose_model_deployment.own import Own, add_going, read_own, spec_revision
from compose_model_deployment.pools import (
    PoolCluster,
    cluster_routing,
    pool_clusters,
    pool_endpoint_ready,
    pools_still_serving,
    release_pools,
    settle_pools,
    write_pools,
)
from compose_model_deployment.quotas import QUOTA_REQUIREMENTS, Answer, read_quotas, request_quotas
from compose_model_deployment.usages import write_usages
from modelplane import protojson
from modelplane.capacity import DeploymentKey
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.deployment.progress import (
    ObservedCondition,
    failover_condition,
    lost_clusters,
    next_call,
    observed_conditions,
    progressing_condition,
)
from modelplane.deployment.report import report
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import keep_all, parse_or_keep, wait
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.structs import string_at
from modelplane.fnkit.xr import name_of, namespace_of
from modelplane.names import (
    CANNOT_MOVE_ANNOTATION,
    DEPLOYMENT_LABEL,
    SERVING_ANNOTATION,
    endpoint_key,
    is_routing_pool_key,
    replica_key,
    replica_key_ordinal,
    replica_ordinal,
)
from modelplane.problems import Problem, describe
from modelplane.routing.picker import InvalidPickerConfigError, Mode, Routing, routing_of
from modelplane.scheduling import (
    Existing,
    InvalidDeploymentError,
    Placement,
    Schedule,
    State,
    replica_name,
    schedule,
    strategy_of,
)
from modelplane.scheduling.strategy import Strategy
from modelplane_models.model_deployment import ModelDeployment


def _now() -> datetime:
    return datetime.now(UTC)


class FunctionRunner(ComposeRunner):
    """Runs the ModelDeployment function."""

    def __init__(self, clock: Callable[[], datetime] = _now) -> None:
        """Create the runner; it keeps the fleet it read last, to skip objects that did not change.

        Args:
            clock: The time of a call, read once at its start (tests pass a fixed one):
                the only wall clock the function reads.
        """
        self.fleet = FleetReader()
        super().__init__(lambda req, rsp, ledger, log: compose(req, rsp, ledger, log, self.fleet, clock()))


def compose(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    ledger: Ledger,
    log: structlog.stdlib.BoundLogger,
    reader: FleetReader,
    now: datetime,
) -> None:
    """Resolve the fleet and what runs, schedule, write the replicas and endpoints, then status and conditions."""
    key = _key(req)
    _every_call(rsp, key)
    request_cache(rsp, key, cache_ref(req))
    xr = parse_or_keep(ledger, log, ModelDeployment, _invalid)
    if xr is None:
        return
    inputs = _inputs(ledger, log, key, xr)
    if inputs is None:
        return
    cache, answer = inputs
    spec = req.observed.composite.resource.fields.get("spec")
    fields = spec.struct_value.fields if spec is not None and spec.HasField("struct_value") else {}
    deployment = Deployment(
        name=name_of(xr),
        namespace=namespace_of(xr),
        spec=fields,
        revision=spec_revision(fields),
        priority=answer.priority,
        preemptible=answer.quotas.preemptible,
    )
    fleet = reader.read(req, key)
    for skipped in fleet.skipped:
        response.warning(rsp, f"ignoring {skipped}")
    own = read_own(req, key)
    add_going(own, fleet.going, key)
    strategy = strategy_of(xr.spec) if xr.spec is not None else None
    conditions = _observed_conditions(req)
    clusters = fleet.view.clusters
    lost = (
        lost_clusters(
            {r.occupancy.cluster for r in own.replicas.values()},
            {c.name: c.ready for c in clusters.values() if not c.deleting},
            {*(c.name for c in clusters.values() if c.deleting), *fleet.view.unreadable},
            {c.name: c.not_ready_since for c in clusters.values() if c.not_ready_since},
            conditions.get(Type.FAILOVER),
            now,
        )
        if strategy is not None
        else {}
    )
    existing = Existing(
        replicas={o: r.occupancy for o, r in own.replicas.items()},
        listed=fleet.listed,
        revision=deployment.revision,
        opaque=frozenset(own.unreadable),
        lost=lost,
        strategy=strategy,
        unsure=frozenset(own.unsure),
        going=own.going,
    )
    try:
        plan = schedule(
            xr,
            fleet.view,
            existing=existing,
            cached=cache.ready if cache is not None else None,
            quotas=answer.quotas,
        )
    except InvalidDeploymentError as err:
        keep_all(ledger, log, _unscheduled(Reason.INVALID_SPEC, describe([err.problem])))
        return
    # A composed replica that cannot be read is kept exactly as it is, with its endpoint.
    for ordinal, why in own.unreadable.items():
        ledger.keep([replica_key(ordinal), endpoint_key(ordinal)], f"its observed ModelReplica cannot be read ({why})")
    routing = routing_of(
        xr.spec.routing.model_dump(mode="json", exclude_none=True) if xr.spec and xr.spec.routing else None
    )
    pooled = pool_clusters([p.cluster for p in plan.placements], own)
    replica_routing = _replica_routing(req, routing, pooled, own)
    ready = write_desired(ledger, plan, deployment, own, replica_routing)
    routed = _write_routing(ledger, deployment, routing, pooled, own, sorted(replica_routing.joined), fleet=fleet.named)
    for orphan in _keep_orphan_endpoints(ledger, plan):
        response.warning(rsp, f"{orphan} is kept without traffic: its ModelReplica is neither observed nor listed")
    _removals(ledger, plan, own)
    # Once every replica is desired, kept or let go: each one's Usages follow it (none on an Existing cluster).
    write_usages(ledger, deployment, fleet.clusters, {h.name for h in fleet.listed})
    _mark_cannot_move(rsp, plan)
    waiting = waiting_replicas(req, plan, cache, ready, deployment.spec) if cache is not None else {}
    _write_status(rsp, plan, deployment, ready, own, waiting)
    said = report(plan, own.unreadable)
    set_conditions(
        rsp, said.condition, routed, *_placement_strategy(rsp, plan), *_cache(rsp, cache, waiting, deployment)
    )
    if routed.status != Status.TRUE:
        response.warning(rsp, routed.message)
    if strategy is not None and plan.rollout is not None:
        _progress(rsp, plan, ready, strategy, lost=lost, observed=conditions.get(Type.PROGRESSING), now=now)
    for warning in said.warnings:
        response.warning(rsp, warning)
    for normal in said.normal:
        response.normal(rsp, normal)
    if said.condition.status != Status.TRUE:
        log.info("not every replica is placed as specified", message=said.condition.message)
    serving = sum(1 for p in plan.placements if p.replica in ready and p.state not in _NOT_SERVING)
    set_ready(rsp, ready=plan.complete and serving >= plan.desired)


_NOT_SERVING = frozenset({State.LEAVING, State.LOST, State.OUTDATED})


def _inputs(
    ledger: Ledger, log: structlog.stdlib.BoundLogger, key: DeploymentKey, xr: ModelDeployment
) -> tuple[Cache | None, Answer] | None:
    """The ModelCache (with spec.modelCacheRef) and the quotas and priority; None, everything kept, until usable."""
    req, ref = ledger.req, cache_ref(ledger.req)
    if not all(r.fetched(req) for r in (*REQUIREMENTS, *QUOTA_REQUIREMENTS, *((CACHE,) if ref else ()))):
        wait(ledger, log, Type.SCHEDULED, Reason.WAITING_FOR_FLEET, "reading the fleet")
        return None
    answer = read_quotas(req, ledger.rsp, key, (xr.spec.priority or "") if xr.spec is not None else "")
    if answer.problem is not None:
        # Like a missing input: nothing new is placed and nothing that runs is touched until it is fixed.
        keep_all(ledger, log, _unscheduled(Reason(answer.problem.reason.value), answer.problem.message))
        return None
    return (read_cache(req, ref) if ref else None), answer


def _progress(  # noqa: PLR0913 - the rollout's inputs
    rsp: fnv1.RunFunctionResponse,
    plan: Schedule,
    ready: set[str],
    strategy: Strategy,
    *,
    lost: dict[str, tuple[float, str]],
    observed: ObservedCondition | None,
    now: datetime,
) -> None:
    """Progressing and Failover, and when to be called again for them."""
    if plan.rollout is None:
        return
    progressing = progressing_condition(plan.rollout, plan.desired, ready, observed, strategy, now)
    set_conditions(rsp, progressing, failover_condition(lost, strategy))
    ttl = next_call(lost, strategy, progressing, observed, now)
    if ttl is not None:
        rsp.meta.ttl.FromSeconds(int(ttl))


def _cache(
    rsp: fnv1.RunFunctionResponse, cache: Cache | None, waiting: dict[str, str], deployment: Deployment
) -> list[Condition]:
    """CacheReady, with spec.modelCacheRef only: whether the cache exists and which replicas wait for a copy."""
    if cache is None:
        return []
    condition = cache_condition(cache, waiting)
    if condition.reason == Reason.CACHE_NOT_FOUND:
        response.warning(rsp, condition.message)
    for warning in engine_warnings(deployment.spec, node_local=cache.node_local):
        response.warning(rsp, warning)
    return [condition]


def _placement_strategy(rsp: fnv1.RunFunctionResponse, plan: Schedule) -> list[Condition]:
    """CostOptimized or CarbonAware: whether it applies, or which field is missing and that Spread is used."""
    note = plan.note
    if note is None:  # Spread: no condition, as before strategies existed
        return []
    if not note.applied:
        response.warning(rsp, f"spec.placement.strategy: {note.message}")
    status = Status.TRUE if note.applied else Status.FALSE
    return [Condition(Type.PLACEMENT_STRATEGY, status, Reason(note.reason), note.message)]


def _replica_routing(
    req: fnv1.RunFunctionRequest, routing: Routing, clusters: dict[str, PoolCluster], own: Own
) -> ReplicaRouting:
    """How the replicas route this call.

    In mode Replica the clusters whose pool serves on until their replicas' own endpoints are Ready keep
    their replicas in it meanwhile (on KServe, their routes serve the pool's host).
    """
    still = pools_still_serving(req, clusters, own) if routing.mode is Mode.REPLICA else []
    return ReplicaRouting(_own_endpoint(req, routing), routing.mode is Mode.POOL, frozenset(still))


def _own_endpoint(req: fnv1.RunFunctionRequest, routing: Routing) -> Callable[[Placement], bool]:
    """Whether a replica has its own endpoint: always in mode Replica; in mode Pool until its cluster's pool serves.

    Until the cluster's pool endpoint is Ready (being set up, or its cluster publishes no ProviderConfig to
    compose a pool with) the replica is routed to as in mode Replica, so the route always has a backend.
    """
    if routing.mode is Mode.REPLICA:
        return lambda _: True
    served: dict[str, bool] = {}  # by cluster: read once per call, not once per replica

    def own(p: Placement) -> bool:
        if p.cluster not in served:
            served[p.cluster] = pool_endpoint_ready(req, p.cluster)
        return not served[p.cluster]

    return own


def _write_routing(  # noqa: PLR0913 - what routing reads
    ledger: Ledger,
    deployment: Deployment,
    routing: Routing,
    clusters: dict[str, PoolCluster],
    own: Own,
    still: list[str],
    *,
    fleet: Sequence[tuple[str, Struct]],
) -> Condition:
    """Compose (mode Pool) or release (mode Replica) the deployment's pool on each cluster; say how it routes."""
    unsure = bool(own.unreadable)
    if routing.mode is Mode.REPLICA:
        release_pools(ledger, still, unsure=unsure)
        message = "mode Replica: each replica is its own endpoint"
        if still:
            message += f"; the pools on {', '.join(still)} serve until their replicas' own endpoints are Ready"
        return Condition(Type.ROUTED, Status.TRUE, Reason.ROUTED, message)
    readable = cluster_routing(fleet, set(clusters))
    try:
        write_pools(ledger, deployment, routing, clusters, readable)
    except InvalidPickerConfigError as err:
        ledger.keep([k for k in ledger.req.observed.resources if is_routing_pool_key(k)], str(err))
        return Condition(Type.ROUTED, Status.FALSE, Reason.INVALID_SPEC, f"{err}; every pool is kept as it is")
    settle_pools(
        ledger,
        clusters,
        "InferenceCluster {cluster} publishes no ProviderConfig: its pool is kept as it is",
        unsure=unsure,
    )
    unread = sorted(set(clusters) - set(readable))
    pools = ", ".join(f"{c.name} ({c.ready} Ready)" for c in clusters.values() if c.name in readable)
    parts = [f"an InferencePool on {pools}"] if pools else []
    if unread:
        parts.append(f"{', '.join(unread)} publish no ProviderConfig: their replicas are routed to one by one")
    message = f"mode Pool: {'; '.join(parts) or 'no replica placed yet'}"
    return Condition(Type.ROUTED, Status.TRUE, Reason.ROUTED, message)


_ANNOTATION_TEXT = 1024  # the why of a replica that cannot move, cut to a readable length


def _keep_orphan_endpoints(ledger: Ledger, plan: Schedule) -> list[str]:
    """Keep, without traffic, each observed endpoint whose replica no input shows (its observed copy lost).

    Retiring or removing a replica drops its endpoint with it, in the same call: an endpoint left
    behind alone is a lost input, never the user's reason to delete it.
    """
    gone = {*plan.retired, *plan.removed, *plan.preempted}
    observed, out = ledger.req.observed.resources, []
    for name in sorted(observed):
        ordinal = (
            replica_key_ordinal(name.replace("endpoint-", "replica-", 1)) if name.startswith("endpoint-") else None
        )
        if ordinal is None or name in ledger.rsp.desired.resources or replica_key(ordinal) in observed:
            continue
        if replica_name(plan.deployment.name, ordinal) in gone:
            continue
        why = "its ModelReplica is neither observed nor listed: kept without traffic"
        out += ledger.keep([name], why, annotations={SERVING_ANNOTATION: "false"})
    return out


def _removals(ledger: Ledger, plan: Schedule, own: Own) -> None:
    """Account for the replicas (and their endpoints) this call lets go, each for the user's reason."""
    let_go = dict.fromkeys(own.going, "it is being deleted")
    reasons = [
        (plan.removed, "spec.replicas scaled down"),
        (plan.retired, "retired: replaced, and enough are Ready"),
        (plan.preempted, "preempted: it gives way to a higher priority (preemption LowerPriority)"),
    ]
    for names, why in reasons:
        for name in names:
            found = replica_ordinal(plan.deployment.name, name)
            if found is not None:
                let_go[found] = why
    for ordinal, why in sorted(let_go.items()):
        ledger.remove([replica_key(ordinal), endpoint_key(ordinal)], why)


def _mark_cannot_move(rsp: fnv1.RunFunctionResponse, plan: Schedule) -> None:
    """Annotate each leaving replica with why it cannot move, for its cluster's drain status."""
    why = plan.rollout.blocked if plan.rollout is not None else ""
    if not why:
        return
    for p in plan.placements:
        key = replica_key(p.ordinal)
        if p.state is not State.LEAVING or key not in rsp.desired.resources:
            continue
        meta = rsp.desired.resources[key].resource.fields["metadata"].struct_value
        annotations = meta.fields["annotations"].struct_value
        annotations.update({CANNOT_MOVE_ANNOTATION: why[:_ANNOTATION_TEXT]})


def _key(req: fnv1.RunFunctionRequest) -> DeploymentKey:
    """The deployment's namespace and name as observed ("" for what it lacks: the parse then says so)."""
    return DeploymentKey(
        string_at(req.observed.composite.resource, "metadata", "namespace") or "",
        string_at(req.observed.composite.resource, "metadata", "name") or "",
    )


def _every_call(rsp: fnv1.RunFunctionResponse, key: DeploymentKey) -> None:
    """Ask for the fleet, and write status.selector (the scale subresource's label selector).

    An autoscaler (HPA, KEDA) refuses a scale target without a selector, so it is written
    before anything can stop the call: waiting for the fleet or an invalid spec included.
    """
    request_requirements(rsp, key)
    request_quotas(rsp)
    if key.name:
        resource.update(rsp.desired.composite, {"status": {"selector": f"{DEPLOYMENT_LABEL}={key.name}"}})


def _observed_conditions(req: fnv1.RunFunctionRequest) -> dict[str, ObservedCondition]:
    status = req.observed.composite.resource.fields.get("status")
    items = status.struct_value.fields.get("conditions") if status is not None else None
    if items is None or not items.HasField("list_value"):
        return {}
    values = [protojson.struct_to_dict(v.struct_value) for v in items.list_value.values if v.HasField("struct_value")]
    return observed_conditions(values)


def _invalid(problems: list[Problem]) -> Condition:
    return _unscheduled(Reason.INVALID_SPEC, f"the ModelDeployment is invalid: {describe(problems)}")


def _unscheduled(reason: Reason, message: str) -> Condition:
    return Condition(Type.SCHEDULED, Status.FALSE, reason, message)


def _write_status(
    rsp: fnv1.RunFunctionResponse,
    plan: Schedule,
    deployment: Deployment,
    ready: set[str],
    own: Own,
    waiting: dict[str, str],
) -> None:
    placements = []
    updated = 0
    for p in plan.placements:
        pools = {str(r.role): r.pool for r in p.roles}
        entry: dict[str, Any] = {
            "replica": p.replica,
            "cluster": p.cluster,
            "pools": pools,
            "ready": p.replica in ready,
        }
        observed = own.replicas.get(p.ordinal)
        revision = observed.occupancy.revision if p.held is not None and observed else deployment.revision
        if revision:
            entry["revision"] = revision
        entry["state"] = str(p.state)
        if p.held is not None:
            entry["reason"] = str(p.held.reason)
        elif p.replica in waiting:
            entry["reason"] = str(Reason.CACHE_NOT_READY)
        elif p.replaces:
            entry["reason"] = f"Replaces {p.replaces}"
        # Why it runs there: decided now, or as recorded on its ModelReplica when it was placed.
        decision = p.decision or (observed.decision if observed is not None else None)
        if decision is not None:
            entry["decidedBy"] = str(decision.decided_by)
            entry["why"] = decision.message
        placements.append(entry)
        updated += revision == deployment.revision and p.state not in _NOT_SERVING
    status: dict[str, Any] = {
        "replicas": len(plan.placements),
        "readyReplicas": len(ready),
        "updatedReplicas": updated,
        "observedRevision": deployment.revision,
        "placements": placements,
        **plan.spend.status(),
    }
    if plan.unplaced:
        status["unschedulable"] = [
            {"replica": u.replica, "reason": str(u.reason), "message": u.message} for u in plan.unplaced
        ]
    # On top of what the call wrote first (status.selector), not instead of it.
    written = protojson.struct_to_dict(rsp.desired.composite.resource).get("status") or {}
    resource.update(rsp.desired.composite, {"status": {**written, **status}})
