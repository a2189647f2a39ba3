"""A drain's progress (``spec.drain``): the ModelReplicas still on the cluster, and which cannot move and why."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf import struct_pb2 as structpb

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.structs import string_at
from modelplane.names import CANNOT_MOVE_ANNOTATION

_LISTED_DEPLOYMENTS = 32


def drain_status(replicas: Iterable[structpb.Struct], cluster: str) -> dict[str, Any]:
    """``status.drain``: the ModelReplicas on ``cluster``, their ModelDeployments, and which cannot move and why.

    Why comes from the ``cannot-move`` annotation a ModelDeployment sets on a replica whose
    replacement cannot be placed: the replicas this function already lists, nothing more.
    """
    remaining = 0
    deployments: set[str] = set()
    stuck: dict[str, tuple[int, str]] = {}
    for struct in replicas:
        if string_at(struct, "spec", "inferenceClusterRef", "name") != cluster:
            continue
        remaining += 1
        owner = string_at(struct, "spec", "deploymentRef", "name")
        if not owner:
            continue
        key = f"{string_at(struct, 'metadata', 'namespace') or ''}/{owner}"
        deployments.add(key)
        why = string_at(struct, "metadata", "annotations", CANNOT_MOVE_ANNOTATION)
        if why:
            count, first = stuck.get(key, (0, why))
            stuck[key] = (count + 1, min(first, why))
    out: dict[str, Any] = {"remaining": remaining, "deployments": sorted(deployments)[:_LISTED_DEPLOYMENTS]}
    if stuck:
        out["blocked"] = [
            {"deployment": key, "replicas": count, "reason": why}
            for key, (count, why) in sorted(stuck.items())[:_LISTED_DEPLOYMENTS]
        ]
    return out


def drained_condition(drain: Mapping[str, Any] | None) -> Condition:
    """Drained: True once nothing remains; False while replicas remain, naming those that cannot move and why."""
    if drain is None:
        return Condition(Type.DRAINED, Status.FALSE, Reason.NOT_DRAINING, "spec.drain is not set")
    remaining = int(drain["remaining"])
    if not remaining:
        return Condition(Type.DRAINED, Status.TRUE, Reason.DRAINED, "no ModelReplica remains on the cluster")
    head = f"{remaining} ModelReplica(s) remain, of {', '.join(drain['deployments'])}"
    blocked = drain.get("blocked") or []
    if not blocked:
        return Condition(Type.DRAINED, Status.FALSE, Reason.DRAINING, f"{head}: moving a wave at a time")
    why = "; ".join(f"{b['deployment']} ({b['replicas']}): {b['reason']}" for b in blocked)
    return Condition(Type.DRAINED, Status.FALSE, Reason.DRAIN_BLOCKED, f"{head}; cannot move: {why}")
