"""An InferenceCluster's capacity status: per pool, what its class offers and what its ModelReplicas hold.

The figures are ``modelplane.capacity.summarize``'s: per pool the free
accelerators of each node, the replicas they account for, and the replicas
placed concurrently beyond capacity, so a ModelDeployment reads the clusters
rather than every ModelReplica of the fleet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane import protojson
from modelplane.capacity import ClusterInfo, ClusterSummary, Listed, cluster_info, replica_holding
from modelplane.capacity.published import PoolClass
from modelplane.capacity.snapshot import PoolObservations, Snapshot
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.xr import invalid
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica


def cluster_pools(xr: InferenceCluster, observations: PoolObservations) -> ClusterInfo:
    """The cluster as capacity reads it, with the figures its scheduler reports now.

    Not the figures of the XR's own status: this function wrote them, replicas
    included, and reading them back would count those replicas again.
    """
    info = cluster_info(xr)
    if info is None:
        name = xr.metadata.name if xr.metadata is not None and xr.metadata.name else ""
        return ClusterInfo(name=name, labels={}, cordoned=False, ready=False, not_ready="", pools=())
    return replace(info, pools=tuple(replace(p, observed=observations.pools.get(p.name)) for p in info.pools))


def listed_replicas(replicas: Iterable[structpb.Struct], rsp: fnv1.RunFunctionResponse, cluster: str) -> list[Listed]:
    """The ModelReplicas on ``cluster``: what each holds and when it was created (one that is invalid is reported)."""
    out: list[Listed] = []
    for struct in replicas:
        # Only this cluster's replicas are read whole: while it drains the list is the fleet's.
        if inputs.string_at(struct, "spec", "inferenceClusterRef", "name") != cluster:
            continue
        try:
            holding = replica_holding(ModelReplica.model_validate(protojson.struct_to_dict(struct)))
        except pydantic.ValidationError as err:
            inputs.report(rsp, f"ModelReplica {inputs.string_at(struct, 'metadata', 'name')}", invalid(err))
            continue
        if holding is not None:
            out.append(Listed(holding, inputs.string_at(struct, "metadata", "creationTimestamp")))
    return out


_NAMED_REPLICAS = 10


def overcommitted_condition(summary: ClusterSummary) -> Condition:
    """Overcommitted: whether replicas not Ready yet were placed together beyond the pools' capacity."""
    names = summary.overcommitted
    if not names:
        message = "every ModelReplica fits the pools' free capacity"
        return Condition(Type.OVERCOMMITTED, Status.FALSE, Reason.WITHIN_CAPACITY, message)
    more = len(names) - _NAMED_REPLICAS
    named = ", ".join(names[:_NAMED_REPLICAS]) + (f" and {more} more" if more > 0 else "")
    message = f"ModelReplica(s) {named} placed concurrently beyond capacity; their ModelDeployments move them"
    return Condition(Type.OVERCOMMITTED, Status.TRUE, Reason.OVERCOMMITTED, message)


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
