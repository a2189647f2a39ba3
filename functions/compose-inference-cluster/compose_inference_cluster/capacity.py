"""An InferenceCluster's capacity status: per pool, what its class offers and what its ModelReplicas hold.

The figures are ``modelplane.capacity.summarize``'s: per pool the free
accelerators of each node, the replicas they account for, and the replicas
placed concurrently beyond capacity, so a ModelDeployment reads the clusters
rather than every ModelReplica of the fleet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pydantic
from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from compose_inference_cluster.removing import removal_pending
from compose_inference_cluster.watches import Watched
from modelplane import protojson
from modelplane.capacity import ClusterInfo, ClusterSummary, Listed, cluster_info, replica_occupancy, summarize
from modelplane.capacity.published import PoolClass, capacity_status, cost_status, pool_classes
from modelplane.capacity.snapshot import PoolObservations, Snapshot, pool_observations
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.structs import string_at
from modelplane.fnkit.xr import name_of
from modelplane.kinds import API_VERSION
from modelplane.names import CLUSTER_LABEL, cluster_label
from modelplane.problems import invalid
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster, Spec
from modelplane_models.model_replica import ModelReplica

REPLICAS = Requirement("replicas", API_VERSION, "ModelReplica")


def request_replicas(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Ask for the ModelReplicas labelled with this cluster; while it or one of its pools drains, for every one.

    A replica composed before its ModelDeployment wrote ``CLUSTER_LABEL`` (an upgrade of a running
    system) is not selected until that deployment's next reconcile labels it: capacity in use may
    read low until then, and converges. A drain must not be declared done on that: while
    ``spec.drain`` is set the whole fleet's list is read, as before the label, so the drain counts
    labelled or not; so it is while a pool taken out of the spec may still be kept
    (``removing.removal_pending``), so that it is not deleted under an unlabelled replica.
    Either way each replica is matched by ``spec.inferenceClusterRef`` in place.
    Read in place, before the XR is parsed: the requirement is asked for on every call.
    """
    xr = req.observed.composite.resource
    spec = xr.fields.get("spec")
    drain = spec.struct_value.fields.get("drain") if spec is not None else None
    if (drain is not None and drain.HasField("bool_value") and drain.bool_value) or removal_pending(req):
        REPLICAS.request(rsp)
        return
    REPLICAS.request(rsp, labels={CLUSTER_LABEL: cluster_label(string_at(xr, "metadata", "name"))})


@dataclass(frozen=True)
class Capacity:
    """The cluster's ``status.capacity`` and the two conditions about it, and ``status.cost`` (None: no price)."""

    status: dict[str, Any]
    known: Condition
    overcommitted: Condition
    cost: dict[str, Any] | None = None


def cluster_capacity(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    xr: InferenceCluster,
    spec: Spec,
    watched: Watched,
    class_specs: Mapping[str, InferenceClass],
) -> Capacity:
    """Capacity from what the scheduler's Objects observed and the cluster's replicas."""
    classes = pool_classes(class_specs)
    pools = [p.name for p in spec.nodePools or []]
    device_classes = sorted({c.device_class for c in classes.values() if c.device_class})
    # A scheduler with nothing to observe (Kueue without a ClusterQueue) has no figures: capacity is the declared one.
    read, unobserved = watched.scheduler.snapshot, watched.observation.unobserved
    snapshot = read(watched.objects, device_classes) if read is not None and not unobserved else None
    observations = pool_observations(snapshot, pools) if snapshot is not None else PoolObservations({})
    cluster = cluster_pools(xr, observations)
    replicas = listed_replicas(REPLICAS.structs(req), rsp, cluster.name)
    summary = summarize(cluster, {n: c.per_node for n, c in classes.items()}, replicas)
    known = capacity_condition(spec, classes, snapshot, observations, unobserved)
    if cluster.price.problem is not None:
        response.warning(rsp, f"{cluster.price.problem}: status.cost is left out")
    cost = cost_status(cluster.pools, classes, summary, cluster.price)
    return Capacity(capacity_status(cluster.pools, classes, summary), known, overcommitted_condition(summary), cost)


def cluster_pools(xr: InferenceCluster, observations: PoolObservations) -> ClusterInfo:
    """The cluster as capacity reads it, with the figures its scheduler reports now.

    Not the figures of the XR's own status: this function wrote them, replicas
    included, and reading them back would count those replicas again.
    """
    info = cluster_info(xr)
    if info is None:
        return ClusterInfo(name=name_of(xr), labels={}, cordoned=False, ready=False, not_ready="", pools=())
    return replace(info, pools=tuple(replace(p, observed=observations.pools.get(p.name)) for p in info.pools))


def listed_replicas(replicas: Iterable[structpb.Struct], rsp: fnv1.RunFunctionResponse, cluster: str) -> list[Listed]:
    """The ModelReplicas on ``cluster``: what each holds and when it was created (one that is invalid is reported)."""
    out: list[Listed] = []
    for struct in replicas:
        # Only this cluster's replicas are read whole: while it drains the list is the fleet's.
        if string_at(struct, "spec", "inferenceClusterRef", "name") != cluster:
            continue
        try:
            occupancy = replica_occupancy(ModelReplica.model_validate(protojson.struct_to_dict(struct)))
        except pydantic.ValidationError as err:
            inputs.report(rsp, f"ModelReplica {string_at(struct, 'metadata', 'name')}", invalid(err))
            continue
        if occupancy is not None:
            out.append(Listed(occupancy, string_at(struct, "metadata", "creationTimestamp")))
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
    spec: Spec,
    classes: Mapping[str, PoolClass],
    snapshot: Snapshot | None,
    observations: PoolObservations,
    unobserved: str = "",
) -> Condition:
    """CapacityKnown: whether every pool's class is known, and where the figures in use come from."""
    unknown = sorted({p.className for p in spec.nodePools or [] if p.className not in classes})
    if unknown:
        message = f"no accelerator known for InferenceClass(es) {', '.join(unknown)}: those pools have no capacity"
        return Condition(Type.CAPACITY_KNOWN, Status.FALSE, Reason.CLASS_NOT_FOUND, message)
    if snapshot is None:
        message = "declared pool sizes minus what ModelReplicas hold"
        message = f"{unobserved}: {message}" if unobserved else message
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
