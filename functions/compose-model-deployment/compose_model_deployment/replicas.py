"""A ModelReplica as the scheduler reads it (``Occupancy``), straight from its protobuf Struct.

Every field read is checked as ``ModelReplica``'s generated model checks it, with the model's own
bounds; a replica that does not read cleanly goes through the model
(``modelplane.fnkit.inputs.read_one``). Fields the scheduler does not read are not validated: a
replica whose pod template the API server would now refuse still holds its GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from google.protobuf import struct_pb2 as structpb

from modelplane.capacity import DeploymentKey, Occupancy, RoleOccupancy, replica_occupancy, role_occupancy
from modelplane.capacity.occupancy import priority_of
from modelplane.fnkit.inputs import read_one
from modelplane.fnkit.structs import Fields, bounds, need, obj, readiness_at, string, text, whole
from modelplane.names import PRIORITY_ANNOTATION, PRIORITY_CLASS_ANNOTATION, REVISION_LABEL
from modelplane.topology import Role
from modelplane_models.model_replica import DeploymentRef, InferenceClusterRef, ModelReplica, Spec, Topology, Workers

# What the model declares of the fields read here (a role's fields are declared as the unified ones).
_COUNT = bounds(Workers, "count")
_TENSOR, _PIPELINE, _DATA, _DATA_LOCAL = (bounds(Topology, f) for f in ("tensor", "pipeline", "data", "dataLocal"))
_POOL = bounds(Spec, "poolName")
_CLUSTER, _DEPLOYMENT = bounds(InferenceClusterRef, "name"), bounds(DeploymentRef, "name")


def read_replica(struct: structpb.Struct) -> tuple[Occupancy | None, str]:
    """What one ModelReplica holds; None and why when it cannot be read."""
    read = read_one("ModelReplica", struct, occupancy_of, ModelReplica, replica_occupancy)
    if read.value is None:
        return None, read.why or "it has no name or spec"
    return read.value, ""


# ModelReplica -> Occupancy, as ``modelplane.capacity.replica_occupancy`` reads the model.


@dataclass(frozen=True)
class _Topology:
    tensor: int
    pipeline: int | None
    data: int | None
    dataLocal: int | None  # noqa: N815 - the API's field name, as ``TopologyLike`` reads it


@dataclass(frozen=True)
class _Workers:
    count: int | None
    topology: _Topology


_Shape = tuple[int | None, int, int | None, int | None, int | None]


def _shape(workers: Fields) -> _Shape:
    """A ``workers`` block as (count, tensor, pipeline, data, dataLocal)."""
    topology = need(obj(workers.get("topology")))
    return (
        whole(workers.get("count"), _COUNT),
        need(whole(topology.get("tensor"), _TENSOR)),
        whole(topology.get("pipeline"), _PIPELINE),
        whole(topology.get("data"), _DATA),
        whole(topology.get("dataLocal"), _DATA_LOCAL),
    )


@lru_cache(maxsize=4096)
def _role_occupancy(role: Role, pool: str, shape: _Shape) -> RoleOccupancy:
    # Replicas share a few shapes and pools: build each role once.
    count, tensor, pipeline, data, data_local = shape
    return role_occupancy(role, pool, _Workers(count, _Topology(tensor, pipeline, data, data_local)))


def _role(role: Role, fields: Fields | None) -> RoleOccupancy | None:
    if fields is None:
        return None
    pool = need(string(fields.get("poolName"), _POOL))
    return _role_occupancy(role, pool, _shape(need(obj(fields.get("workers")))))


def occupancy_of(fields: Fields) -> Occupancy | None:
    """What a ModelReplica holds, read in place; None without a name or spec."""
    metadata, spec = obj(fields.get("metadata")), obj(fields.get("spec"))
    name = text(metadata.get("name")) if metadata is not None else None
    namespace = text(metadata.get("namespace")) if metadata is not None else None
    # Whether it serves (``modelplane.capacity.replica_occupancy`` reads the model so).
    ready = readiness_at(fields, strict=True).true
    if spec is None:
        return None
    cluster = need(string(need(obj(spec.get("inferenceClusterRef"))).get("name"), _CLUSTER))
    owner = obj(spec.get("deploymentRef"))
    deployment = need(string(owner.get("name"), _DEPLOYMENT)) if owner is not None else None
    pool = string(spec.get("poolName"), _POOL)
    workers = obj(spec.get("workers"))
    unified = _shape(workers) if workers is not None else None
    prefill = _role(Role.PREFILL, obj(spec.get("prefill")))
    decode = _role(Role.DECODE, obj(spec.get("decode")))
    if metadata is None or not name:
        return None
    roles: tuple[RoleOccupancy, ...] = ()
    if unified is not None and pool:
        roles = (_role_occupancy(Role.UNIFIED, pool, unified),)
    elif unified is None and prefill is not None and decode is not None:
        roles = (prefill, decode)
    namespace = namespace or ""
    return Occupancy(
        namespace=namespace,
        name=name,
        deployment=DeploymentKey(namespace, deployment) if deployment is not None else None,
        cluster=cluster,
        roles=roles,
        ready=ready,
        revision=_revision(metadata),
        **_priority(metadata),
    )


def _revision(metadata: Fields) -> str:
    """The revision label a replica was composed with ("" without one).

    A replica of this deployment listed in the fleet but missing from its observed resources is then
    not mistaken for one of an older revision (and retired first) because its observed copy was lost.
    """
    labels = metadata.get("labels")
    label = (
        labels.struct_value.fields.get(REVISION_LABEL)
        if labels is not None and labels.HasField("struct_value")
        else None
    )
    return label.string_value if label is not None and label.HasField("string_value") else ""


def _priority(metadata: Fields) -> dict[str, Any]:
    """The priority annotations a replica was composed with, as ``Occupancy`` fields (none: no priority)."""
    annotations = metadata.get("annotations")
    if annotations is None or not annotations.HasField("struct_value"):
        return {}
    fields = annotations.struct_value.fields
    texts = {
        k: v.string_value
        for k in (PRIORITY_ANNOTATION, PRIORITY_CLASS_ANNOTATION)
        if (v := fields.get(k)) is not None and v.HasField("string_value")
    }
    value, name = priority_of(texts)
    return {"priority": value, "priority_class": name} if value or name else {}
