"""Resolve a ModelReplica against its cluster and classes into the ``ReplicaWork`` backends write."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.backends.model import DeviceClaim, ReplicaWork, RoleWork
from modelplane.conditions import Reason
from modelplane.scheduling import Claim, SelectorError, match_cel
from modelplane.scheduling.devices import class_view
from modelplane.topology import Role, footprint
from modelplane_models.inference_class import InferenceClass


class ResolveError(ValueError):
    """The replica cannot be composed on its cluster as it stands; ``reason`` says why."""

    def __init__(self, reason: Reason, message: str) -> None:
        """Carry the condition reason with the message."""
        super().__init__(message)
        self.reason = reason


def _at(role: Role) -> str:
    return "spec" if role is Role.UNIFIED else f"spec.{role}"


def _claims(
    role: Role, selector: Mapping[str, Any], klass: InferenceClass, gpus_per_node: int
) -> tuple[DeviceClaim, ...]:
    view = class_view(klass)
    name = klass.metadata.name if klass.metadata else "?"
    if view is None or klass.spec is None:
        raise ResolveError(Reason.CLASS_NOT_FOUND, f"InferenceClass {name} has no spec")
    device_classes = {d.name: d.deviceClassName or "" for d in klass.spec.devices}
    accelerator = next((d for d in view.devices if d.claim is Claim.DRA), None)
    if accelerator is None or not device_classes.get(accelerator.name):
        raise ResolveError(Reason.INVALID_SPEC, f"InferenceClass {name}: no DRA device with a deviceClassName")
    claims = [DeviceClaim(accelerator.name, device_classes[accelerator.name], gpus_per_node, str(selector["cel"]))]
    for index, extra in enumerate(selector.get("devices") or []):
        try:
            matched = [d for d in view.devices if match_cel(str(extra["cel"]), d)]
        except SelectorError as err:
            field = f"{_at(role)}.nodeSelector.devices[{index}].cel"
            raise ResolveError(Reason.CEL_ERROR, f"{field}: {err.message}") from err
        dra = next((d for d in matched if d.claim is Claim.DRA and device_classes.get(d.name)), None)
        if dra is not None:  # a Synthetic device only filtered pools: there is nothing to claim
            count = int(extra.get("count") or 1)
            claims.append(DeviceClaim(str(extra["name"]), device_classes[dra.name], count, str(extra["cel"])))
    return tuple(claims)


def _roles(spec: Mapping[str, Any]) -> list[tuple[Role, Mapping[str, Any]]]:
    if "workers" in spec:
        return [(Role.UNIFIED, spec)]
    return [(r, spec[str(r)]) for r in (Role.PREFILL, Role.DECODE) if str(r) in spec]


def resolve(
    name: str,
    namespace: str,
    spec: Mapping[str, Any],
    cluster: Mapping[str, Any],
    classes: Mapping[str, InferenceClass],
    labels: Mapping[str, str],
) -> ReplicaWork:
    """Resolve a replica's spec (as written) on its cluster.

    Args:
        name: The ModelReplica's name.
        namespace: Its namespace.
        spec: Its spec as written (templates pass through unchanged).
        cluster: Its InferenceCluster as written.
        classes: The InferenceClasses of its pools, by name (those found).
        labels: Labels of every remote object.

    Raises:
        ResolveError: A pool the cluster does not have, a class not found, a CEL error.
    """
    cluster_spec = cluster.get("spec") or {}
    pools = {str(p.get("name")): str(p.get("className")) for p in cluster_spec.get("nodePools") or []}
    cluster_name = (cluster.get("metadata") or {}).get("name", "?")
    roles = []
    for role, block in _roles(spec):
        pool = str(block.get("poolName", ""))
        if pool not in pools:
            message = f"{_at(role)}.poolName: InferenceCluster {cluster_name} has no node pool {pool!r}"
            raise ResolveError(Reason.POOL_NOT_FOUND, message)
        klass = classes.get(pools[pool])
        if klass is None:
            message = f"{_at(role)}.poolName: InferenceClass {pools[pool]} of pool {pool} not found"
            raise ResolveError(Reason.CLASS_NOT_FOUND, message)
        workers = block["workers"]
        topology = workers.get("topology") or {}
        parallelism = {k: int(topology.get(k) or 1) for k in ("tensor", "pipeline", "data", "dataLocal")}
        fp = footprint(
            tensor=parallelism["tensor"],
            pipeline=parallelism["pipeline"],
            data=parallelism["data"],
            data_local=parallelism["dataLocal"],
            workers=int(workers.get("count") or 1),
            field=f"{_at(role)}.workers.topology",
        )
        claims = _claims(role, block.get("nodeSelector") or {}, klass, fp.gpus_per_node)
        roles.append(RoleWork(role, pool, fp, parallelism, workers.get("template") or {}, claims))
    scheduler = cluster_spec.get("scheduler") or {}
    return ReplicaWork(
        name=name,
        namespace=namespace,
        labels=dict(labels),
        roles=tuple(roles),
        scheduler=str(scheduler.get("type") or "None"),
        scheduler_settings=scheduler,
        cluster=str(cluster_name),
        prometheus=str((cluster_spec.get("observability") or {}).get("prometheus") or "None"),
        routing=dict(spec.get("routing") or {}),
    )
