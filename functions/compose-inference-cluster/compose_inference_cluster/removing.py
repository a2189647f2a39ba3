"""Pools taken out of ``spec.nodePools`` while ModelReplicas run on them: kept, drained, deleted once empty.

Deleting a pool from the spec is the user's act, but deleting the cloud node pool
under serving replicas is an outage they did not ask for (Kubernetes keeps a PVC in
use the same way). So a pool that left the spec while a ModelReplica of this
cluster still names it is *removing*: its cloud object is kept as observed, it is
published in ``status.removingPools`` for the ModelDeployments, which place no new
replica there and move those on it surge-first as they do for ``spec.drain``, and
the ``PoolsRemoved`` condition names the replicas. Once none remains it is deleted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.clusters.types import SYSTEM_POOL
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.structs import string_at
from modelplane.names import CANNOT_MOVE_ANNOTATION, pool_key

_LISTED = 32  # replicas listed per pool in status (as a drain lists deployments)
_NAMED = 10  # replicas named per pool in the condition


@dataclass(frozen=True)
class RemovingPool:
    """A pool no longer in ``spec.nodePools`` on which ModelReplicas still run.

    Attributes:
        name: The pool's name.
        replicas: The ModelReplicas on it ("namespace/name"), sorted.
        blocked: Why some cannot move, as their ModelDeployments annotate them ("namespace/name: why"), sorted.
        class_name: Its InferenceClass as the cluster last published it ("" when it never did).
    """

    name: str
    replicas: tuple[str, ...]
    blocked: tuple[str, ...] = ()
    class_name: str = ""


def _pools_of(struct: structpb.Struct) -> list[str]:
    """The pools a ModelReplica runs on: ``spec.poolName``, or its prefill and decode roles' pools."""
    found = [string_at(struct, "spec", "poolName")]
    found += [string_at(struct, "spec", role, "poolName") for role in ("prefill", "decode")]
    return sorted({p for p in found if p})


def removing_pools(
    replicas: Iterable[structpb.Struct],
    cluster: str,
    in_spec: Collection[str],
    classes: Mapping[str, str] | None = None,
) -> list[RemovingPool]:
    """The pools outside ``in_spec`` that ModelReplicas of ``cluster`` still run on, by name.

    ``classes``: each pool's InferenceClass as last published (``published_classes``).
    """
    known = classes or {}
    on: dict[str, list[str]] = {}
    blocked: dict[str, list[str]] = {}
    for struct in replicas:
        if string_at(struct, "spec", "inferenceClusterRef", "name") != cluster:
            continue
        name = f"{string_at(struct, 'metadata', 'namespace') or ''}/{string_at(struct, 'metadata', 'name') or ''}"
        why = string_at(struct, "metadata", "annotations", CANNOT_MOVE_ANNOTATION)
        for pool in _pools_of(struct):
            if pool in in_spec:
                continue
            on.setdefault(pool, []).append(name)
            if why:
                blocked.setdefault(pool, []).append(f"{name}: {why}")
    return [
        RemovingPool(p, tuple(sorted(on[p])), tuple(sorted(blocked.get(p, ()))), known.get(p, "")) for p in sorted(on)
    ]


def published_classes(req: fnv1.RunFunctionRequest) -> dict[str, str]:
    """Each pool's InferenceClass as the cluster last published it: a pool out of the spec has it nowhere else.

    From ``status.removingPools`` (carried while the pool is kept), else ``status.capacity.pools``
    (written while the pool was in the spec). Read in place: the parsed XR leaves its status out,
    and a status of any shape only gives fewer classes.
    """
    status = req.observed.composite.resource.fields.get("status")
    fields = status.struct_value.fields if status is not None and status.HasField("struct_value") else {}
    capacity = fields.get("capacity")
    listed = capacity.struct_value.fields.get("pools") if capacity is not None else None
    out: dict[str, str] = {}
    for value in (*_items(listed), *_items(fields.get("removingPools"))):
        name, class_name = string_at(value, "name"), string_at(value, "className")
        if name and class_name:
            out[name] = class_name
    return out


def _items(value: structpb.Value | None) -> list[structpb.Struct]:
    """The objects of a list value (none when it is absent or not a list)."""
    if value is None or not value.HasField("list_value"):
        return []
    return [v.struct_value for v in value.list_value.values if v.HasField("struct_value")]


def removing_status(pools: Sequence[RemovingPool]) -> list[dict[str, Any]]:
    """``status.removingPools``: each pool, how many ModelReplicas remain on it, and the first of them."""
    return [
        {
            "name": p.name,
            **({"className": p.class_name} if p.class_name else {}),
            "remaining": len(p.replicas),
            "replicas": list(p.replicas[:_LISTED]),
        }
        for p in pools
    ]


def removed_condition(pools: Sequence[RemovingPool]) -> Condition:
    """PoolsRemoved: True when no pool outside the spec is kept; else which are, for which replicas, and why stuck."""
    if not pools:
        message = "every pool taken out of spec.nodePools is removed"
        return Condition(Type.POOLS_REMOVED, Status.TRUE, Reason.POOLS_REMOVED, message)
    parts = []
    for p in pools:
        more = len(p.replicas) - _NAMED
        named = ", ".join(p.replicas[:_NAMED]) + (f" and {more} more" if more > 0 else "")
        parts.append(f"pool {p.name} is kept until its ModelReplica(s) {named} move")
    blocked = [b for p in pools for b in p.blocked]
    if blocked:
        message = f"{'; '.join(parts)}; cannot move: {'; '.join(blocked[:_NAMED])}"
        return Condition(Type.POOLS_REMOVED, Status.FALSE, Reason.POOL_REMOVAL_BLOCKED, message)
    message = f"{'; '.join(parts)} (not in spec.nodePools: their ModelDeployments move them a wave at a time)"
    return Condition(Type.POOLS_REMOVED, Status.FALSE, Reason.POOL_IN_USE, message)


def removal_pending(req: fnv1.RunFunctionRequest) -> bool:
    """Whether a pool may be leaving: an observed cloud pool, or one the last status kept, is not in the spec.

    Read in place, before the XR is parsed, to decide which ModelReplicas to ask for.
    """
    xr = req.observed.composite.resource
    spec = xr.fields.get("spec")
    written = spec.struct_value.fields.get("nodePools") if spec is not None else None
    pools = written.list_value.values if written is not None and written.HasField("list_value") else ()
    in_spec = {pool_key(n) for p in pools if p.HasField("struct_value") and (n := string_at(p.struct_value, "name"))}
    status = xr.fields.get("status")
    kept = status.struct_value.fields.get("removingPools") if status is not None else None
    if kept is not None and kept.HasField("list_value") and kept.list_value.values:
        return True
    # The system pool is composed whatever the spec says.
    composed = (k for k in req.observed.resources if k.startswith(pool_key("")) and k != pool_key(SYSTEM_POOL))
    return any(k not in in_spec for k in composed)
