"""Builders of small fleets (classes, clusters, deployments, replicas) for the lib tests."""

from __future__ import annotations

import operator
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from modelplane.capacity import ClusterInfo, Occupancy
from modelplane.capacity.pools import as_cluster_info, as_occupancy
from modelplane.capacity.summary import Listed
from modelplane.cel.k8s import exact, parse_quantity
from modelplane.scheduling import (
    ClassDevice,
    DeviceMatcher,
    Existing,
    FleetView,
    Schedule,
    SelectorError,
    fleet_view,
    request_of,
    schedule,
)
from modelplane.scheduling.quotas import Quotas
from modelplane.topology import Role
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica

NAMESPACE = "ml"
HOPPER = 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'
IB = 'device.driver == "ib.nvidia.com"'
_TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.11.0"}]}}


def gpu_class(
    name: str,
    *,
    per_node: int = 8,
    arch: str = "Hopper",
    memory: str = "80Gi",
    ib: int = 0,
    dra_nic: bool = False,
) -> InferenceClass:
    """A class of ``per_node`` GPUs, optionally with ``ib`` Synthetic NICs and a DRA NIC."""
    devices: list[dict[str, Any]] = [
        {
            "name": "gpu",
            "driver": "gpu.nvidia.com",
            "deviceClassName": "gpu.nvidia.com",
            "count": per_node,
            "attributes": {"architecture": {"string": arch}, "cudaComputeCapability": {"version": "9.0.0"}},
            "capacity": {"memory": {"value": memory}},
        }
    ]
    if ib:
        devices.append(
            {
                "name": "ib",
                "driver": "ib.nvidia.com",
                "claim": "Synthetic",
                "count": ib,
                "attributes": {"linkRate": {"string": "NDR"}},
            }
        )
    if dra_nic:
        devices.append(
            {
                "name": "nic",
                "driver": "nic.example.com",
                "deviceClassName": "nic.example.com",
                "count": 1,
                "attributes": {"architecture": {"string": "Hopper"}},
            }
        )
    return InferenceClass.model_validate({"metadata": {"name": name}, "spec": {"devices": devices}})


@dataclass(frozen=True)
class Pool:
    """A pool of a test cluster."""

    name: str
    class_name: str
    nodes: int
    max_nodes: int | None = None


def cluster(
    name: str,
    *pools: Pool,
    labels: Mapping[str, str] | None = None,
    ready: bool | None = True,
    cordoned: bool = False,
    observed: Mapping[str, tuple[str, int]] | None = None,
    removing: Collection[str] = (),
    components: Sequence[Mapping[str, Any]] = (),
    removing_class: str = "",
) -> InferenceCluster:
    """A cluster; ``ready=None`` leaves it without status, ``observed`` maps pool → (source, inUse).

    ``removing``: pools its function keeps out of the spec while replicas run on them (``status.removingPools``),
    each of the class ``removing_class`` when given.
    ``components``: its serving stack's components as it publishes them (``status.components``).
    """
    node_pools = []
    for p in pools:
        pool: dict[str, Any] = {"name": p.name, "className": p.class_name, "nodeCount": p.nodes}
        if p.max_nodes is not None:
            pool["maxNodeCount"] = p.max_nodes
        node_pools.append(pool)
    body: dict[str, Any] = {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "cluster": {"source": "Existing", "existing": {"secretRef": {"namespace": "cs", "name": name}}},
            "nodePools": node_pools,
            "cordoned": cordoned,
        },
    }
    if ready is not None:
        status: dict[str, Any] = {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "Creating"}]
        }
        if observed:
            classes = {p.name: p.class_name for p in pools}
            status["capacity"] = {
                "pools": [
                    {"name": n, "className": classes[n], "inUse": used, "source": source}
                    for n, (source, used) in observed.items()
                ]
            }
        if removing:
            status["removingPools"] = [
                {"name": n, "remaining": 1, **({"className": removing_class} if removing_class else {})}
                for n in sorted(removing)
            ]
        if components:
            status["components"] = [dict(c) for c in components]
        body["status"] = status
    return InferenceCluster.model_validate(body)


@dataclass(frozen=True)
class Shape:
    """The shape of one role: selector, devices, topology and worker count."""

    tensor: int = 1
    pipeline: int = 1
    data: int = 1
    data_local: int = 1
    count: int = 1
    cel: str = HOPPER
    devices: tuple[tuple[str, str, int], ...] = ()
    template: Mapping[str, Any] = field(default_factory=lambda: _TEMPLATE)

    def workers(self) -> dict[str, Any]:
        topology = {"tensor": self.tensor, "pipeline": self.pipeline, "data": self.data, "dataLocal": self.data_local}
        return {"count": self.count, "topology": topology, "template": dict(self.template)}

    def node_selector(self) -> dict[str, Any]:
        selector: dict[str, Any] = {"cel": self.cel}
        if self.devices:
            selector["devices"] = [{"name": n, "cel": c, "count": k} for n, c, k in self.devices]
        return selector


def deployment(
    name: str = "llm",
    *,
    replicas: int = 1,
    shape: Shape | None = None,
    prefill: Shape | None = None,
    decode: Shape | None = None,
    match_labels: Mapping[str, str] | None = None,
    match_expressions: Sequence[Mapping[str, Any]] = (),
    namespace: str = NAMESPACE,
    routing: Mapping[str, Any] | None = None,
    cache: Mapping[str, Any] | None = None,
    priority: str | None = None,
) -> ModelDeployment:
    """A deployment: unified with ``shape`` (the default), or disaggregated with ``prefill`` and ``decode``.

    ``cache`` is its ``spec.modelCacheRef``.
    """
    spec: dict[str, Any] = {"replicas": replicas}
    if priority is not None:
        spec["priority"] = priority
    if cache is not None:
        spec["modelCacheRef"] = dict(cache)
    if routing is not None:
        spec["routing"] = dict(routing)
    if match_labels or match_expressions:
        spec["clusterSelector"] = {}
        if match_labels:
            spec["clusterSelector"]["matchLabels"] = dict(match_labels)
        if match_expressions:
            spec["clusterSelector"]["matchExpressions"] = [dict(e) for e in match_expressions]
    if prefill is not None and decode is not None:
        for role, s in (("prefill", prefill), ("decode", decode)):
            spec[role] = {"nodeSelector": s.node_selector(), "workers": s.workers()}
    else:
        s = shape or Shape()
        spec["nodeSelector"] = s.node_selector()
        spec["workers"] = s.workers()
    return ModelDeployment.model_validate({"metadata": {"name": name, "namespace": namespace}, "spec": spec})


def replica(
    name: str,
    *,
    cluster: str,
    pools: Mapping[Role, str],
    shapes: Mapping[Role, Shape] | None = None,
    deployment: str | None = None,
    namespace: str = NAMESPACE,
    ready: bool = False,
    priority: tuple[str, int] | None = None,
) -> ModelReplica:
    """A replica on ``cluster`` with one pool per role (default shape: one 1-GPU worker per role).

    ``priority``: its FleetPriorityClass and value, as its deployment annotates it.
    """
    spec: dict[str, Any] = {"inferenceClusterRef": {"name": cluster}}
    if deployment is not None:
        spec["deploymentRef"] = {"name": deployment}
    for role, pool in pools.items():
        s = (shapes or {}).get(role, Shape())
        if role is Role.UNIFIED:
            spec |= {"poolName": pool, "nodeSelector": s.node_selector(), "workers": s.workers()}
        else:
            spec[str(role)] = {"poolName": pool, "nodeSelector": s.node_selector(), "workers": s.workers()}
    body: dict[str, Any] = {"metadata": {"name": name, "namespace": namespace}, "spec": spec}
    if priority is not None:
        body["metadata"]["annotations"] = {
            "modelplane.ai/priority-class": priority[0],
            "modelplane.ai/priority": str(priority[1]),
        }
    if ready:
        body["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    return ModelReplica.model_validate(body)


def replicas_of(result: Schedule, dep: ModelDeployment) -> list[ModelReplica]:
    """The ModelReplicas a schedule's placements stand for, as the function would compose them."""
    spec = dep.spec
    assert spec is not None
    out = []
    for p in result.placements:
        body: dict[str, Any] = {
            "inferenceClusterRef": {"name": p.cluster},
            "deploymentRef": {"name": result.deployment.name},
        }
        for r in p.roles:
            if r.role is Role.UNIFIED:
                assert spec.nodeSelector is not None and spec.workers is not None
                body |= {
                    "poolName": r.pool,
                    "nodeSelector": spec.nodeSelector.model_dump(exclude_none=True),
                    "workers": spec.workers.model_dump(exclude_none=True),
                }
            else:
                block = spec.prefill if r.role is Role.PREFILL else spec.decode
                assert block is not None
                body[str(r.role)] = {"poolName": r.pool} | block.model_dump(exclude_none=True)
        out.append(
            ModelReplica.model_validate(
                {"metadata": {"name": p.replica, "namespace": result.deployment.namespace}, "spec": body}
            )
        )
    return out


_COMPARE = {">=": operator.ge, "<=": operator.le, "==": operator.eq}


def fake_matcher(expression: str, device: ClassDevice) -> bool:
    """A tiny stand-in for DRA CEL: ``&&``-joined terms.

    Terms: ``device.driver == "d"``, ``device.attributes["d"].key == "v"`` (string attributes),
    ``mem >= 80Gi`` (capacity memory), ``true``, ``false``, and ``boom`` (raises SelectorError).
    """
    result = True
    for term in (t.strip() for t in expression.split("&&")):
        if term == "boom":
            raise SelectorError(expression, "no such key: boom")
        if term in ("true", "false"):
            result = result and term == "true"
        elif term.startswith("device.driver == "):
            result = result and device.driver == term.removeprefix("device.driver == ").strip('"')
        elif term.startswith("device.attributes["):
            left, value = term.split(" == ")
            domain, key = left.removeprefix('device.attributes["').split('"].')
            got = device.attributes.get(key) if domain == device.driver else None
            result = result and got == value.strip('"')
        elif term.startswith("mem "):
            _, op, want = term.split()
            memory = device.capacity.get("memory")
            result = (
                result
                and memory is not None
                and _COMPARE[op](exact(parse_quantity(str(memory))), exact(parse_quantity(want)))
            )
        else:
            raise SelectorError(expression, f"cannot parse {term!r}")
    return result


PLACED_LATER = "2026-01-01T00:00:00Z"  # when the deployment under test placed its replicas


def view(
    clusters: Sequence[InferenceCluster | ClusterInfo],
    classes: Sequence[InferenceClass],
    replicas: Sequence[ModelReplica | Occupancy | Listed] = (),
    *,
    unreadable: Mapping[str, str] | None = None,
    deleting: Collection[str] = (),
    draining: Collection[str] = (),
    matcher: DeviceMatcher = fake_matcher,
) -> FleetView:
    """The fleet as the scheduler reads it, with the named clusters being deleted or draining."""
    infos = [i for i in map(as_cluster_info, clusters) if i is not None]
    facts = [replace(i, deleting=i.name in deleting, draining=i.draining or i.name in draining) for i in infos]
    return fleet_view(facts, classes, replicas, matcher=matcher, unreadable=unreadable)


def plan(
    dep: ModelDeployment,
    clusters: Sequence[InferenceCluster | ClusterInfo],
    classes: Sequence[InferenceClass],
    replicas: Sequence[ModelReplica | Occupancy] = (),
    *,
    existing: Existing | None = None,
    matcher: DeviceMatcher = fake_matcher,
    unreadable: Mapping[str, str] | None = None,
    deleting: Collection[str] = (),
    draining: Collection[str] = (),
    quotas: Quotas | None = None,
) -> Schedule:
    """``schedule`` as the function calls it: the fleet's view from every replica, its own ones listed."""
    occupancies = [h for h in map(as_occupancy, replicas) if h is not None]
    key = request_of(dep).key
    mine = [h for h in occupancies if h.deployment == key]
    # The deployment's replicas were placed after the fleet's others: its clusters count them last.
    listed = [Listed(h, created=PLACED_LATER if h.deployment == key else "") for h in occupancies]
    fleet = view(
        clusters, classes, listed, unreadable=unreadable, deleting=deleting, draining=draining, matcher=matcher
    )
    return schedule(dep, fleet, existing=replace(existing or Existing(), listed=mine), quotas=quotas)


def priced(
    name: str,
    per_gpu_hour: str | None = None,
    currency: str = "USD",
    watts: int | None = None,
    *,
    per_node: int = 8,
    arch: str = "Hopper",
) -> InferenceClass:
    """A class of ``per_node`` GPUs with a price (and power) per GPU."""
    body = gpu_class(name, per_node=per_node, arch=arch).model_dump(exclude_none=True, by_alias=True)
    if per_gpu_hour is not None:
        body["spec"]["cost"] = {"perGPUHour": per_gpu_hour, "currency": currency}
    if watts is not None:
        body["spec"]["powerWatts"] = watts
    return InferenceClass.model_validate(body)


def site(
    name: str, *pools: Pool, multiplier: str | None = None, grams: int | None = None, labels: Mapping[str, str] = {}
) -> InferenceCluster:
    """A Ready cluster with a cost multiplier and a carbon intensity."""
    body = cluster(name, *pools, labels=labels).model_dump(exclude_none=True, by_alias=True)
    if multiplier is not None:
        body["spec"]["cost"] = {"multiplier": multiplier}
    if grams is not None:
        body["spec"]["carbon"] = {"gramsCO2PerKWh": grams}
    return InferenceCluster.model_validate(body)
