"""What a preview found, as plain data: the tables people read and the documents machines read.

``build`` reads a settled fleet once; the text tables (``modelplane.preview.tables``),
``--output json|yaml`` and the plan (``modelplane.preview.plan``) all read this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pydantic

from modelplane.capacity import PoolCapacity, PoolKey, Source
from modelplane.preview.fleet import Fleet
from modelplane.preview.manifests import Key, Manifest
from modelplane.preview.references import Selectable, selectable, unmatched_selectors
from modelplane.preview.states import XRState
from modelplane.preview.targets import helm_targets
from modelplane.scheduling.view import build_view, cluster_facts
from modelplane.topology import TopologyError, replica_footprint
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica

M = TypeVar("M", InferenceCluster, InferenceClass, ModelReplica, ModelDeployment)


@dataclass(frozen=True)
class Condition:
    """One condition of an object: its status, reason and message."""

    type: str
    status: str = "Unknown"
    reason: str = ""
    message: str = ""

    @property
    def true(self) -> bool:
        """Whether the condition holds."""
        return self.status == "True"


@dataclass(frozen=True)
class ClassView:
    """One InferenceClass."""

    name: str
    gpus_per_node: int | None
    product: str
    valid: Condition


@dataclass(frozen=True)
class PoolView:
    """One node pool's GPUs, as the scheduler counts them."""

    pool: str
    class_name: str
    nodes: int
    gpus_per_node: int
    declared: int
    observed: int | None  # GPUs in use a cluster scheduler (KAI, Kueue) reports; None when none does
    in_use: int
    free: int
    source: str
    overcommitted: int = 0


@dataclass(frozen=True)
class ReleaseView:
    """One Helm release, on the cluster it installs into."""

    name: str
    chart: str
    version: str
    namespace: str
    ready: bool | None  # None: nothing reported yet


@dataclass(frozen=True)
class StackView:
    """A workload cluster's ServingStack."""

    name: str
    ready: Condition
    gateway: str


@dataclass(frozen=True)
class ClusterView:
    """One InferenceCluster: what it is, its pools, its stack and its releases."""

    name: str
    source: str
    scheduler: str
    backend: str
    cordoned: bool
    ready: Condition
    labels: dict[str, str]
    pools: tuple[PoolView, ...]
    stack: StackView | None
    releases: tuple[ReleaseView, ...]


@dataclass(frozen=True)
class RoleView:
    """One role of a replica: where it runs and what it takes."""

    role: str  # unified, prefill or decode
    pool: str
    gpus: int
    gpus_per_node: int
    nodes: int  # nodes the role spans (per worker x workers)


@dataclass(frozen=True)
class ReplicaView:
    """One ModelReplica."""

    name: str
    cluster: str
    roles: tuple[RoleView, ...]
    ready: bool

    @property
    def gpus(self) -> int:
        """GPUs the replica takes over its roles."""
        return sum(r.gpus for r in self.roles)


@dataclass(frozen=True)
class DeploymentView:
    """One ModelDeployment: how many replicas it wants, has placed and has serving."""

    name: str  # namespace/name
    desired: int
    placed: int
    ready: int
    gpus_per_replica: int | None
    shape: str  # e.g. "TP4", "TP8 PP2" or "prefill TP8 + decode TP8"
    scheduled: Condition
    replicas: tuple[ReplicaView, ...]


@dataclass(frozen=True)
class BackendView:
    """One backend of a service's route and its share of the traffic."""

    name: str
    weight: int
    share: float  # percent


@dataclass(frozen=True)
class ServiceView:
    """One ModelService and where its route sends traffic."""

    name: str
    address: str
    path: str
    routed: Condition
    backends: tuple[BackendView, ...]
    # Selectors of spec.endpoints[] that match nothing its namespace has or will have, each said in full.
    unmatched: tuple[str, ...] = ()


@dataclass(frozen=True)
class Message:
    """One function result, once, with the object it is about."""

    severity: str
    object: str
    text: str


@dataclass(frozen=True)
class FleetView:
    """Everything the preview shows about a settled fleet."""

    source: str
    objects: int
    passes: int
    classes: tuple[ClassView, ...]
    clusters: tuple[ClusterView, ...]
    deployments: tuple[DeploymentView, ...]
    services: tuple[ServiceView, ...]
    gateways: dict[str, str]
    control_plane_releases: tuple[ReleaseView, ...]
    messages: tuple[Message, ...]
    errors: dict[str, str] = field(default_factory=dict)  # object -> why its render failed


def _name(key: Key) -> str:
    return "/".join(filter(None, key[1:]))


def condition(xr: Manifest, typ: str) -> Condition:
    """The condition ``typ`` of ``xr`` (Unknown when it has none)."""
    for c in xr.get("status", {}).get("conditions", []):
        if c.get("type") == typ:
            return Condition(typ, str(c.get("status", "Unknown")), str(c.get("reason", "")), str(c.get("message", "")))
    return Condition(typ)


def _of_kind(fleet: Fleet, kind: str) -> list[tuple[Key, XRState]]:
    return [(k, s) for k, s in fleet.states.items() if k[0] == kind]


def _models(fleet: Fleet, kind: str, model: type[M]) -> list[M]:
    parsed = []
    for _key, state in _of_kind(fleet, kind):
        try:
            parsed.append(model.model_validate(state.xr))
        except pydantic.ValidationError:
            continue  # shown as it is; the function reports what is wrong with it
    return parsed


def _capacities(fleet: Fleet) -> dict[PoolKey, PoolCapacity]:
    """Pool capacity as the scheduler reads it: the fleet view of what each cluster publishes."""
    clusters = _models(fleet, "InferenceCluster", InferenceCluster)
    view = build_view(
        [f for f in map(cluster_facts, clusters) if f is not None], _models(fleet, "InferenceClass", InferenceClass)
    )
    overflow = {
        (c.metadata.name, p.name): p.overcommitted or 0
        for c in clusters
        if c.metadata is not None and c.status is not None and c.status.capacity is not None
        for p in c.status.capacity.pools or []
    }
    out: dict[PoolKey, PoolCapacity] = {}
    for (cluster, name), state in view.pools.items():
        pool = next(p for p in view.clusters[cluster].pools if p.name == name)
        declared = pool.nodes * state.free.per_node
        out[cluster, name] = PoolCapacity(
            cluster=cluster,
            pool=name,
            class_name=pool.class_name,
            per_node=state.free.per_node,
            nodes=pool.nodes,
            held=declared - state.free.free,
            observed_in_use=pool.observed.in_use if pool.observed is not None else None,
            source=pool.observed.source if pool.observed is not None else Source.DECLARED,
            overcommitted=overflow.get((cluster, name), 0),
            node_free=state.free,
        )
    return out


def _classes(fleet: Fleet) -> tuple[ClassView, ...]:
    rows = []
    for key, state in _of_kind(fleet, "InferenceClass"):
        devices = [d for d in state.xr.get("spec", {}).get("devices", []) if d.get("claim", "DRA") == "DRA"]
        first = devices[0] if devices else {}
        product = first.get("attributes", {}).get("productName", {}).get("string", "")
        per_node = int(first["count"]) if "count" in first else None
        rows.append(ClassView(_name(key), per_node, str(product), condition(state.xr, "Valid")))
    return tuple(rows)


def _pools(cluster: Manifest, capacities: Mapping[PoolKey, PoolCapacity]) -> tuple[PoolView, ...]:
    name = cluster.get("metadata", {}).get("name", "")
    rows = []
    for pool in cluster.get("spec", {}).get("nodePools", []):
        cap = capacities.get((name, pool.get("name")))
        if cap is None:
            nodes = int(pool.get("maxNodeCount", pool.get("nodeCount", 0)))
            rows.append(PoolView(str(pool.get("name")), str(pool.get("className")), nodes, 0, 0, None, 0, 0, "-"))
            continue
        rows.append(
            PoolView(
                pool=cap.pool,
                class_name=cap.class_name,
                nodes=cap.nodes,
                gpus_per_node=cap.per_node,
                declared=cap.declared,
                observed=cap.observed_in_use,
                in_use=cap.in_use,
                free=cap.free,
                source=str(cap.source),
                overcommitted=cap.overcommitted,
            )
        )
    return tuple(rows)


def _release_ready(release: Manifest, stack_status: Mapping[str, Any]) -> bool | None:
    ready = condition(release, "Ready")
    if ready.status != "Unknown":
        return ready.true
    name = release.get("metadata", {}).get("name", "")
    for entry in stack_status.get("releases", []):
        if name.endswith(f"-{entry.get('name')}") and "ready" in entry:
            return bool(entry["ready"])
    return None


def _release(release: Manifest, stack_status: Mapping[str, Any]) -> ReleaseView:
    provider = release.get("spec", {}).get("forProvider", {})
    chart = provider.get("chart", {})
    return ReleaseView(
        name=str(release.get("metadata", {}).get("name", "")),
        chart=str(chart.get("name", "")),
        version=str(chart.get("version", "")),
        namespace=str(provider.get("namespace", "")),
        ready=_release_ready(release, stack_status),
    )


def _clusters(fleet: Fleet, capacities: Mapping[PoolKey, PoolCapacity]) -> tuple[ClusterView, ...]:
    stacks = dict(_of_kind(fleet, "ServingStack"))
    releases = helm_targets(fleet)
    rows = []
    for key, state in _of_kind(fleet, "InferenceCluster"):
        spec = state.xr.get("spec", {})
        stack_state = stacks.get(("ServingStack", "", key[2]))
        stack = None
        stack_status: Mapping[str, Any] = {}
        if stack_state is not None:
            stack_status = stack_state.xr.get("status", {})
            stack = StackView(
                key[2], condition(stack_state.xr, "Ready"), str(stack_status.get("gateway", {}).get("address", ""))
            )
        rows.append(
            ClusterView(
                name=key[2],
                source=str(spec.get("cluster", {}).get("source", "?")),
                scheduler=str(spec.get("scheduler", {}).get("type", "None")),
                backend=str(spec.get("serving", {}).get("backend", "KServe")),
                cordoned=bool(spec.get("cordoned", False)),
                ready=condition(state.xr, "Ready"),
                labels=dict(sorted(state.xr.get("metadata", {}).get("labels", {}).items())),
                pools=_pools(state.xr, capacities),
                stack=stack,
                releases=tuple(_release(r, stack_status) for r in releases.get(key[2], ())),
            )
        )
    return tuple(rows)


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


def _deployments(fleet: Fleet) -> tuple[DeploymentView, ...]:
    replicas = dict(_of_kind(fleet, "ModelReplica"))
    rows = []
    for key, state in _of_kind(fleet, "ModelDeployment"):
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
                name=_name(key),
                desired=int(spec.get("replicas", 1)),
                placed=len(status.get("placements", [])),
                ready=int(status.get("readyReplicas", 0)),
                gpus_per_replica=gpus,
                shape=_shape(spec),
                scheduled=condition(state.xr, "Scheduled"),
                replicas=own,
            )
        )
    return tuple(rows)


def _services(fleet: Fleet) -> tuple[ServiceView, ...]:
    endpoints: dict[str, list[dict[str, str]]] = {}
    for key, state in _of_kind(fleet, "ModelEndpoint"):
        labels = state.xr.get("metadata", {}).get("labels") or {}
        endpoints.setdefault(key[1], []).append({str(k): str(v) for k, v in labels.items()})
    deployments: dict[str, list[str]] = {}
    for key, _state in _of_kind(fleet, "ModelDeployment"):
        deployments.setdefault(key[1], []).append(key[2])
    namespaces: dict[str, Selectable] = {}
    rows = []
    for key, state in _of_kind(fleet, "ModelService"):
        if key[1] not in namespaces:
            namespaces[key[1]] = selectable(endpoints.get(key[1], ()), deployments.get(key[1], ()))
        path = ""
        backends: list[BackendView] = []
        for route in state.composed:
            if route.get("kind") != "HTTPRoute":
                continue
            for rule in route.get("spec", {}).get("rules", []):
                path = path or next((m.get("path", {}).get("value", "") for m in rule.get("matches", [])), "")
                refs = rule.get("backendRefs", [])
                total = sum(int(r.get("weight", 1)) for r in refs)
                backends += [
                    BackendView(
                        str(r.get("name")),
                        int(r.get("weight", 1)),
                        round(100 * int(r.get("weight", 1)) / total, 1) if total else 0.0,
                    )
                    for r in refs
                ]
        rows.append(
            ServiceView(
                name=_name(key),
                address=str(state.xr.get("status", {}).get("address", "")),
                path=path,
                routed=condition(state.xr, "Routed"),
                backends=tuple(sorted(backends, key=lambda b: b.name)),
                unmatched=unmatched_selectors(state.xr, namespaces[key[1]]),
            )
        )
    return tuple(rows)


# The condition whose message the tables print for each kind (a warning repeating it is left out).
_SHOWN_CONDITION = {"InferenceCluster": "Ready", "ModelDeployment": "Scheduled", "ModelService": "Routed"}


def _messages(fleet: Fleet) -> tuple[Message, ...]:
    """Every warning once; one that repeats a condition message shown elsewhere, and Normal events, are left out."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for key, state in fleet.states.items():
        shown = [
            str(c.get("message", ""))
            for c in state.xr.get("status", {}).get("conditions", [])
            if c.get("message") and c.get("type") == _SHOWN_CONDITION.get(key[0])
        ]
        for result in state.results:
            severity = str(result.get("severity", "?")).removeprefix("SEVERITY_").capitalize()
            text = str(result.get("message", ""))
            if severity == "Normal" or any(m and m in text for m in shown):
                continue
            entry = (severity, f"{key[0]} {_name(key)}", text)
            if entry not in seen:
                seen.add(entry)
                out.append(Message(*entry))
    return tuple(out)


def build(fleet: Fleet, source: str) -> FleetView:
    """Read a settled fleet into the views the preview prints."""
    capacities = _capacities(fleet)
    gateways = {
        _name(k): str(s.xr.get("status", {}).get("address", "")) for k, s in _of_kind(fleet, "InferenceGateway")
    }
    releases = helm_targets(fleet)
    return FleetView(
        source=source,
        objects=len(fleet.states),
        passes=fleet.passes,
        classes=_classes(fleet),
        clusters=_clusters(fleet, capacities),
        deployments=_deployments(fleet),
        services=_services(fleet),
        gateways=gateways,
        control_plane_releases=tuple(_release(r, {}) for r in releases.get("", ())),
        messages=_messages(fleet),
        errors={f"{k[0]} {_name(k)}": msg for k, msg in fleet.errors.items()},
    )
