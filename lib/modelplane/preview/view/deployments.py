"""The workload side of a fleet: each ModelDeployment, its serving shape and its replicas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from modelplane.preview.fleet import Fleet
from modelplane.preview.states import XRState
from modelplane.preview.view.model import DeploymentView, ReplicaView, RoleView
from modelplane.preview.view.read import condition, display_name, of_kind, per_hour
from modelplane.topology import TopologyError, replica_footprint
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica


def _shape(spec: Mapping[str, Any]) -> str:
    def one(block: Mapping[str, Any]) -> str:
        workers = block.get("workers", {})
        topology = workers.get("topology", {})
        parts = [f"TP{topology.get('tensor', 1)}"]
        for field_name, label in (("pipeline", "PP"), ("data", "DP"), ("dataLocal", "DPL")):
            if topology.get(field_name, 1) != 1:
                parts.append(f"{label}{topology[field_name]}")
        count = int(workers.get("count", 1))
        return (f"{count} x " if count != 1 else "") + " ".join(parts)

    if spec.get("prefill") and spec.get("decode"):
        return f"prefill {one(spec['prefill'])} + decode {one(spec['decode'])}"
    return one(spec)


def replica_view(state: XRState) -> ReplicaView:
    """One ModelReplica as the preview shows it: where it runs, what it takes, whether it is Ready."""
    spec = state.xr.get("spec", {})
    roles = []
    try:
        model = ModelReplica.model_validate(state.xr)
        footprint = replica_footprint(model.spec) if model.spec is not None else None
    except (pydantic.ValidationError, TopologyError):
        footprint = None
    for role, fp in footprint.roles if footprint is not None else ():
        pool = spec.get("poolName") if role.value == "unified" else spec.get(role.value, {}).get("poolName")
        roles.append(
            RoleView(role.value, str(pool or "?"), fp.total_gpus, fp.gpus_per_node, fp.nodes_per_worker * fp.workers)
        )
    return ReplicaView(
        name=str(state.xr.get("metadata", {}).get("name", "")),
        cluster=str(spec.get("inferenceClusterRef", {}).get("name", "")),
        roles=tuple(roles),
        ready=condition(state.xr, "Ready").true,
    )


def deployment_views(fleet: Fleet) -> tuple[DeploymentView, ...]:
    """Each ModelDeployment: replicas wanted, placed and Ready, its serving shape and its replicas."""
    replicas = dict(of_kind(fleet, "ModelReplica"))
    rows = []
    for key, state in of_kind(fleet, "ModelDeployment"):
        spec, status = state.xr.get("spec", {}), state.xr.get("status", {})
        try:
            model = ModelDeployment.model_validate(state.xr)
            gpus = replica_footprint(model.spec).total_gpus if model.spec is not None else None
        except (pydantic.ValidationError, TopologyError):
            gpus = None
        own = tuple(
            replica_view(s)
            for k, s in sorted(replicas.items())
            if k[1] == key[1] and s.xr.get("spec", {}).get("deploymentRef", {}).get("name") == key[2]
        )
        rows.append(
            DeploymentView(
                name=display_name(key),
                desired=int(spec.get("replicas", 1)),
                placed=len(status.get("placements", [])),
                ready=int(status.get("readyReplicas", 0)),
                gpus_per_replica=gpus,
                shape=_shape(spec),
                scheduled=condition(state.xr, "Scheduled"),
                replicas=own,
                cost=per_hour(state.xr),
            )
        )
    return tuple(rows)
