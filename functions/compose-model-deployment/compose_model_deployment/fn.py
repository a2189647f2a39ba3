"""The ModelDeployment function: schedule replicas onto the fleet and compose them.

Each call reads the fleet through required resources (every InferenceCluster,
InferenceClass and ModelReplica), asks the pure scheduler where each replica
runs, and composes one ModelReplica per placed replica plus, once a replica
reports where it is reachable, one ModelEndpoint for it. When an input is
missing or invalid it keeps what it composed before: a serving replica is only
ever deleted by the user's own change (scaling down or deleting the deployment).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format
from google.protobuf import struct_pb2 as structpb

from compose_model_deployment.fleet import REQUIREMENTS, FleetReader
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.keep import hold, keep_observed
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import InvalidXRError, parse_composite
from modelplane.kinds import API_VERSION
from modelplane.names import DEPLOYMENT_LABEL, endpoint_key, replica_key
from modelplane.problems import describe
from modelplane.scheduling import InvalidDeploymentError, Placement, Schedule, schedule
from modelplane.topology import Role
from modelplane_models.model_deployment import ModelDeployment

# What a replica carries over from its deployment: the serving shape, without replicas and clusterSelector.
_SHAPE = ("nodeSelector", "workers")


class FunctionRunner(ComposeRunner):
    """Runs the ModelDeployment function."""

    def __init__(self) -> None:
        """Create the runner; it keeps the fleet it read last, to skip objects that did not change."""
        self.fleet = FleetReader()
        super().__init__(lambda req, rsp, log: compose(req, rsp, log, self.fleet))


def compose(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    log: structlog.stdlib.BoundLogger,
    reader: FleetReader,
) -> None:
    """Resolve the fleet, schedule, write the replicas and endpoints, then status and conditions."""
    for requirement in REQUIREMENTS:
        requirement.request(rsp)
    try:
        xr = parse_composite(req, ModelDeployment)
    except InvalidXRError as err:
        hold(req, rsp, log, _unscheduled(Reason.INVALID_SPEC, f"the ModelDeployment is invalid: {err}"))
        return
    if not all(r.fetched(req) for r in REQUIREMENTS):
        # Crossplane answers the requirements and calls again: keep everything meanwhile.
        keep_observed(req, rsp)
        set_conditions(rsp, Condition(Type.SCHEDULED, Status.UNKNOWN, Reason.WAITING_FOR_FLEET, "reading the fleet"))
        return
    fleet = reader.read(req)
    for skipped in fleet.skipped:
        response.warning(rsp, f"ignoring {skipped}")
    try:
        plan = schedule(xr, fleet.clusters, fleet.classes, fleet.replicas)
    except InvalidDeploymentError as err:
        hold(req, rsp, log, _unscheduled(Reason.INVALID_SPEC, describe([err.problem])))
        return
    meta = xr.metadata
    spec = req.observed.composite.resource.fields.get("spec")
    deployment = _Deployment(
        name=(meta.name if meta else None) or "",
        namespace=(meta.namespace if meta else None) or "",
        spec=spec.struct_value.fields if spec is not None and spec.HasField("struct_value") else {},
    )
    ready = _write_desired(req, rsp, plan, deployment)
    _write_status(rsp, plan, deployment.name, ready)
    if plan.complete:
        set_conditions(rsp, Condition(Type.SCHEDULED, Status.TRUE, Reason.SCHEDULED, plan.message))
    else:
        reason = Reason(str(plan.reason)) if plan.reason else Reason.INSUFFICIENT_CAPACITY
        set_conditions(rsp, Condition(Type.SCHEDULED, Status.FALSE, reason, plan.message))
        response.warning(rsp, f"not every replica could be scheduled: {plan.message}")
        log.info("replicas unplaced", message=plan.message)
    set_ready(rsp, ready=plan.complete and len(ready) == plan.desired)


def _unscheduled(reason: Reason, message: str) -> Condition:
    return Condition(Type.SCHEDULED, Status.FALSE, reason, message)


@dataclass(frozen=True)
class _Deployment:
    """The deployment being composed: its identity and its spec as the user wrote it (Struct fields)."""

    name: str
    namespace: str
    spec: Mapping[str, Any]


def _write_replica_spec(out: structpb.Struct, spec: Mapping[str, Any], placement: Placement, deployment: str) -> None:
    # The serving shape is copied from the deployment's Struct as it is: no conversion to dicts and back.
    out.update({"inferenceClusterRef": {"name": placement.cluster}, "deploymentRef": {"name": deployment}})
    unified = placement.pool(Role.UNIFIED)
    if unified is not None:
        _copy_shape(out, spec)
        out["poolName"] = unified
    for role in (Role.PREFILL, Role.DECODE):
        pool = placement.pool(role)
        if pool is not None:
            out[str(role)] = {}
            block = out[str(role)]
            source = spec.get(str(role))
            if source is not None and source.HasField("struct_value"):
                _copy_shape(block, source.struct_value.fields)
            block["poolName"] = pool


def _copy_shape(out: structpb.Struct, spec: Mapping[str, Any]) -> None:
    for key in _SHAPE:
        if key in spec:
            out.fields[key].CopyFrom(spec[key])


def _field(struct: structpb.Struct, *path: str) -> structpb.Value | None:
    """The value at ``path`` in ``struct``, or None where an object along it is missing."""
    fields = struct.fields
    value = None
    for key in path:
        if fields is None or key not in fields:
            return None
        value = fields[key]
        fields = value.struct_value.fields if value.HasField("struct_value") else None
    return value


def _string(struct: structpb.Struct, *path: str) -> str | None:
    """The non-empty value at ``path`` in ``struct`` as a string, or None."""
    value = _field(struct, *path)
    if value is None:
        return None
    text = value.string_value if value.HasField("string_value") else json_format.MessageToDict(value)
    return str(text) if text else None


def _observed_ready(req: fnv1.RunFunctionRequest, key: str) -> tuple[bool, str | None, str | None]:
    """Whether the composed resource under ``key`` is Ready, and the URL and Host it reports."""
    observed = req.observed.resources.get(key)
    if observed is None:
        return False, None, None
    ready = resource.get_condition(observed, "Ready").status == "True"
    url = _string(observed.resource, "status", "endpoint", "url")
    return ready, url, _string(observed.resource, "status", "endpoint", "host")


def _write_desired(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    plan: Schedule,
    deployment: _Deployment,
) -> set[str]:
    """Compose each placed replica and, once it is reachable, its endpoint; return the Ready replicas."""
    labels = {DEPLOYMENT_LABEL: deployment.name}
    ready: set[str] = set()
    for placement in plan.placements:
        key = replica_key(placement.ordinal)
        is_ready, url, host = _observed_ready(req, key)
        meta = {"name": placement.replica, "namespace": deployment.namespace, "labels": labels}
        replica = rsp.desired.resources[key].resource
        replica.update({"apiVersion": API_VERSION, "kind": "ModelReplica", "metadata": meta, "spec": {}})
        _write_replica_spec(replica["spec"], deployment.spec, placement, deployment.name)
        rsp.desired.resources[key].ready = fnv1.READY_TRUE if is_ready else fnv1.READY_FALSE
        if is_ready:
            ready.add(placement.replica)
        if url is not None:
            spec: dict[str, Any] = {"url": url, "replicaRef": {"name": placement.replica}}
            if host is not None:
                # Replicas share their cluster's gateway address; the Host header tells them apart.
                spec["host"] = host
            endpoint = {"apiVersion": API_VERSION, "kind": "ModelEndpoint", "metadata": meta, "spec": spec}
            ekey = endpoint_key(placement.ordinal)
            resource.update(rsp.desired.resources[ekey], endpoint)
            endpoint_ready = resource.get_condition(req.observed.resources.get(ekey), "Ready").status == "True"
            rsp.desired.resources[ekey].ready = fnv1.READY_TRUE if endpoint_ready else fnv1.READY_FALSE
    return ready


def _write_status(rsp: fnv1.RunFunctionResponse, plan: Schedule, name: str, ready: set[str]) -> None:
    placements = []
    for p in plan.placements:
        pools = {str(r.role): r.pool for r in p.roles}
        placements.append({"replica": p.replica, "cluster": p.cluster, "pools": pools, "ready": p.replica in ready})
    status: dict[str, Any] = {
        "replicas": plan.placed,
        "readyReplicas": len(ready),
        "selector": f"{DEPLOYMENT_LABEL}={name}",
        "placements": placements,
    }
    if plan.unplaced:
        status["unschedulable"] = [
            {"replica": u.replica, "reason": str(u.reason), "message": u.message} for u in plan.unplaced
        ]
    resource.update(rsp.desired.composite, {"status": status})
