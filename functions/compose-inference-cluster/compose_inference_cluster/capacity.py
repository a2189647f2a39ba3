"""An InferenceCluster's capacity status: per pool, what its class offers and what its ModelReplicas hold."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.capacity import replica_holding
from modelplane.capacity.observed import Source
from modelplane.capacity.snapshot import PoolObservations, Snapshot
from modelplane.classes import review_class
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.xr import invalid
from modelplane_models.inference_class import InferenceClass
from modelplane_models.model_replica import ModelReplica


@dataclass(frozen=True)
class PoolClass:
    """What capacity needs of a pool's class."""

    per_node: int
    memory: str | None
    device_class: str | None


def pool_classes(specs: Mapping[str, InferenceClass]) -> dict[str, PoolClass]:
    """What capacity needs of each class that has an accelerator, by name."""
    out: dict[str, PoolClass] = {}
    for name, klass in sorted(specs.items()):
        accelerator = review_class(klass.spec).accelerator if klass.spec is not None else None
        if accelerator is None:
            continue
        device = next((d for d in klass.spec.devices if d.name == accelerator.device), None) if klass.spec else None
        out[name] = PoolClass(
            accelerator.count_per_node, accelerator.memory, device.deviceClassName if device else None
        )
    return out


def held_by_pool(replicas: Iterable[structpb.Struct], rsp: fnv1.RunFunctionResponse, cluster: str) -> dict[str, int]:
    """GPUs the ModelReplicas on ``cluster`` hold, per pool."""
    held: dict[str, int] = defaultdict(int)
    for struct in replicas:
        # Only this cluster's replicas are read whole: the fleet's others can be many.
        if inputs.string_at(struct, "spec", "inferenceClusterRef", "name") != cluster:
            continue
        try:
            holding = replica_holding(ModelReplica.model_validate(resource.struct_to_dict(struct)))
        except pydantic.ValidationError as err:
            inputs.report(rsp, f"ModelReplica {inputs.string_at(struct, 'metadata', 'name')}", invalid(err))
            continue
        for role in holding.roles if holding is not None else ():
            held[role.pool] += role.footprint.total_gpus
    return held


def capacity_status(
    node_pools: Sequence[Mapping[str, Any]],
    classes: Mapping[str, PoolClass],
    held: Mapping[str, int],
    observations: PoolObservations,
) -> dict[str, Any]:
    """``status.capacity``: per pool in spec order, and in total."""
    pools: list[dict[str, Any]] = []
    totals = {"declared": 0, "inUse": 0, "free": 0}
    for pool in node_pools:
        name, class_name = str(pool["name"]), str(pool["className"])
        nodes = int(pool.get("maxNodeCount", pool.get("nodeCount", 0)))
        entry: dict[str, Any] = {"name": name, "className": class_name, "nodes": nodes}
        klass = classes.get(class_name)
        if klass is None:
            pools.append({**entry, "source": str(Source.DECLARED)})
            continue
        declared = nodes * klass.per_node
        observed = observations.pools.get(name)
        in_use = observed.in_use if observed is not None else held.get(name, 0)
        figures = {"declared": declared, "inUse": in_use, "free": max(0, declared - in_use)}
        entry["devicesPerNode"] = klass.per_node
        if klass.memory:
            entry["deviceMemory"] = klass.memory
        pools.append({**entry, **figures, "source": str(observed.source if observed is not None else Source.DECLARED)})
        for k, v in figures.items():
            totals[k] += v
    return {**totals, "pools": pools}


def capacity_condition(
    spec: Mapping[str, Any],
    classes: Mapping[str, PoolClass],
    snapshot: Snapshot | None,
    observations: PoolObservations,
) -> Condition:
    """CapacityKnown: whether every pool's class is known, and where the figures in use come from."""
    unknown = sorted({str(p["className"]) for p in spec.get("nodePools") or [] if p["className"] not in classes})
    if unknown:
        message = f"no accelerator known for InferenceClass(es) {', '.join(unknown)}: those pools have no capacity"
        return Condition(Type.CAPACITY_KNOWN, Status.FALSE, Reason.CLASS_NOT_FOUND, message)
    if snapshot is None:
        scheduler = spec.get("scheduler", {})
        if scheduler.get("type") == "Kueue":
            message = "no kueue.clusterQueueName to observe: declared pool sizes minus what ModelReplicas hold"
        else:
            message = "declared pool sizes minus what ModelReplicas hold"
        return Condition(Type.CAPACITY_KNOWN, Status.TRUE, Reason.DECLARED, message)
    if not snapshot.known:
        message = f"{snapshot.missing}; using declared pool sizes minus what ModelReplicas hold"
        return Condition(Type.CAPACITY_KNOWN, Status.FALSE, Reason.SCHEDULER_STATUS_UNAVAILABLE, message)
    parts = [f"{pool}: {o.in_use} GPU(s) in use" for pool, o in sorted(observations.pools.items())]
    quotas = [f"{f.flavor or f.resource} quota {f.quota}" for f in snapshot.figures if f.quota is not None]
    if observations.unassigned:
        parts.append(f"{observations.unassigned} GPU(s) in use on no particular pool (those pools stay Declared)")
    message = f"from {', '.join(snapshot.read)}: " + "; ".join(parts + quotas)
    return Condition(Type.CAPACITY_KNOWN, Status.TRUE, Reason.OBSERVED, message)
