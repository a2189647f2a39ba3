"""A healthy world for the preview: the status live providers and controllers would report.

Offline, nothing observes the composed resources, so nothing they gate ever
becomes Ready. With ``--assume-ready`` the preview hands each XR its composed
resources as a live, healthy system would report them: provider-kubernetes
Objects Ready and Synced with the remote object observed in
``status.atProvider.manifest`` (workloads available, Gateways programmed with an
address), Helm releases and cloud resources Ready, Gateway API objects accepted.
A status a composed resource already carries wins over the simulated one.

Composed Modelplane XRs are not simulated here: they report the status of their
own render.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import pydantic

from modelplane.capacity import Listed, Observed, Occupancy, cluster_info, replica_occupancy, summarize
from modelplane.capacity.observed import Source
from modelplane.capacity.published import capacity_status, pool_classes
from modelplane.names import CLUSTER_LABEL, CONTROL_PLANE_NAMESPACE, KUBECONFIG_KEY, cluster_label, gateway_ca_secret
from modelplane.preview.fleet import merge_status
from modelplane.preview.manifests import Loaded, key_of
from modelplane.preview.states import States
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

Manifest = Mapping[str, Any]

# A fixed time, so that the simulated world renders the same every time.
_TIME = "2025-01-01T00:00:00Z"
# Documentation address ranges (RFC 5737): workload clusters' gateways, the control plane's.
_WORKLOAD_NET = "198.51.100"
_CONTROL_PLANE_NET = "203.0.113"
_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
# Pool figures a cluster scheduler observed (a Declared figure is derived from the replicas themselves).
_OBSERVING_SOURCES = (Source.KAI, Source.KUEUE)


def _condition(kind: str, reason: str, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "lastTransitionTime": _TIME}


def _ready() -> list[dict[str, Any]]:
    return [_condition("Ready", "Available"), _condition("Synced", "ReconcileSuccess")]


def gateway_address(scope: str, *, control_plane: bool = False) -> str:
    """A stable documentation-range address for the Gateway of ``scope`` (a cluster's name)."""
    host = 1 + int(hashlib.sha256(scope.encode()).hexdigest(), 16) % 254
    return f"{_CONTROL_PLANE_NET if control_plane else _WORKLOAD_NET}.{host}"


def _group(obj: Manifest) -> str:
    api_version = str(obj.get("apiVersion", ""))
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _replicas(obj: Manifest) -> int:
    return int(obj.get("spec", {}).get("replicas", 1))


# The healthy status of a remote object on a workload cluster, by kind; others just exist.
def _deployment(obj: Manifest, _scope: str) -> dict[str, Any]:
    n = _replicas(obj)
    return {
        "conditions": [_condition("Available", "MinimumReplicasAvailable")],
        "replicas": n,
        "readyReplicas": n,
        "availableReplicas": n,
        "updatedReplicas": n,
    }


def _leader_worker_set(obj: Manifest, _scope: str) -> dict[str, Any]:
    n = _replicas(obj)
    return {"conditions": [_condition("Available", "AllGroupsReady")], "replicas": n, "readyReplicas": n}


def _llm_inference_service(_obj: Manifest, _scope: str) -> dict[str, Any]:
    return {"conditions": [_condition("Ready", "Ready")]}


def _gateway(_obj: Manifest, scope: str) -> dict[str, Any]:
    return {
        "conditions": [_condition("Accepted", "Accepted"), _condition("Programmed", "Programmed")],
        "addresses": [{"type": "IPAddress", "value": gateway_address(scope)}],
    }


def _gateway_class(_obj: Manifest, _scope: str) -> dict[str, Any]:
    return {"conditions": [_condition("Accepted", "Accepted")]}


def _http_route(obj: Manifest, _scope: str) -> dict[str, Any]:
    parents = [
        {
            "parentRef": dict(ref),
            "controllerName": _GATEWAY_CONTROLLER,
            "conditions": [_condition("Accepted", "Accepted"), _condition("ResolvedRefs", "ResolvedRefs")],
        }
        for ref in obj.get("spec", {}).get("parentRefs") or []
    ]
    return {"parents": parents}


_REMOTE: dict[str, Callable[[Manifest, str], dict[str, Any]]] = {
    "Deployment": _deployment,
    "LeaderWorkerSet": _leader_worker_set,
    "LLMInferenceService": _llm_inference_service,
    "Gateway": _gateway,
    "GatewayClass": _gateway_class,
    "HTTPRoute": _http_route,
}


def _remote(manifest: Manifest, scope: str) -> dict[str, Any]:
    """The remote object as observed on a healthy cluster: its own status over the healthy one."""
    judge = _REMOTE.get(str(manifest.get("kind", "")))
    if judge is None:
        return dict(manifest)
    status = merge_status(manifest.get("status"), judge(manifest, scope))
    return {**manifest, "status": status}


def _object(obj: Manifest) -> dict[str, Any]:
    spec = obj.get("spec", {})
    scope = str(spec.get("providerConfigRef", {}).get("name", ""))
    manifest = spec.get("forProvider", {}).get("manifest")
    status: dict[str, Any] = {"conditions": _ready()}
    if isinstance(manifest, Mapping):
        status["atProvider"] = {"manifest": _remote(manifest, scope)}
    return status


def _control_plane_gateway(obj: Manifest) -> dict[str, Any]:
    meta = obj.get("metadata", {})
    scope = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    return {
        "conditions": [_condition("Accepted", "Accepted"), _condition("Programmed", "Programmed")],
        "addresses": [{"type": "IPAddress", "value": gateway_address(scope, control_plane=True)}],
    }


def _tls_policy(_obj: Manifest) -> dict[str, Any]:
    """A BackendTLSPolicy accepted by the control plane's Envoy Gateway (read per ancestor)."""
    ancestor = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "assumed"}
    conditions = [_condition("Accepted", "Accepted"), _condition("ResolvedRefs", "ResolvedRefs")]
    return {"ancestors": [{"ancestorRef": ancestor, "controllerName": _GATEWAY_CONTROLLER, "conditions": conditions}]}


def _accepted(_obj: Manifest) -> dict[str, Any]:
    return {"conditions": [_condition("Accepted", "Accepted")]}


def _route(obj: Manifest) -> dict[str, Any]:
    return _http_route(obj, "")


def _managed(_obj: Manifest) -> dict[str, Any]:
    return {"conditions": _ready()}


# Composed resources by (API group, kind); a group with kind "*" covers all its kinds.
_COMPOSED: dict[tuple[str, str], Callable[[Manifest], dict[str, Any]]] = {
    ("kubernetes.m.crossplane.io", "Object"): _object,
    ("kubernetes.m.crossplane.io", "*"): _managed,  # ObservedObjectCollection, ClusterProviderConfig
    ("helm.m.crossplane.io", "*"): _managed,  # Release, ClusterProviderConfig
    ("gateway.networking.k8s.io", "Gateway"): _control_plane_gateway,
    ("gateway.networking.k8s.io", "GatewayClass"): _accepted,
    ("gateway.networking.k8s.io", "HTTPRoute"): _route,
    ("gateway.envoyproxy.io", "Backend"): _accepted,
    ("gateway.networking.k8s.io", "BackendTLSPolicy"): _tls_policy,
}
# Cloud providers' managed resources (clusters, node pools...) are Ready once created.
_CLOUD_SUFFIX = ".upbound.io"


def healthy(composed: Manifest) -> dict[str, Any]:
    """``composed`` as a live, healthy system would observe it; its own status wins."""
    group, kind = _group(composed), str(composed.get("kind", ""))
    simulate = _COMPOSED.get((group, kind)) or _COMPOSED.get((group, "*"))
    if simulate is None and group.endswith(_CLOUD_SUFFIX):
        simulate = _managed
    if simulate is None:
        return dict(composed)
    return {**composed, "status": merge_status(composed.get("status"), simulate(composed))}


def _occupancy(xr: Manifest) -> Occupancy | None:
    try:
        return replica_occupancy(ModelReplica.model_validate(xr))
    except pydantic.ValidationError:
        return None


def _composed_replicas(cluster: str, states: States) -> list[Occupancy]:
    """What the ModelReplicas on ``cluster`` occupy: those the simulation composed, and those the cluster lists.

    The cluster's function lists the replicas labelled with it (``CLUSTER_LABEL``), as every replica
    a ModelDeployment composes is; a ModelReplica among the manifests without the label is not counted.
    """
    out = []
    label = cluster_label(cluster)
    for _, state in states.replicas_on(cluster):
        labels = (state.xr.get("metadata") or {}).get("labels") or {}
        if state.parent is None and labels.get(CLUSTER_LABEL) != label:
            continue
        occupancy = states.memo("occupancy", state.xr, _occupancy)
        if occupancy is not None:
            out.append(occupancy)
    return out


def _class(xr: Manifest) -> InferenceClass | None:
    try:
        return InferenceClass.model_validate(xr)
    except pydantic.ValidationError:
        return None


def _classes(states: States) -> dict[str, InferenceClass]:
    found = ((key[2], states.memo("class", state.xr, _class)) for key, state in states.of_kind("InferenceClass"))
    return {name: c for name, c in found if c is not None}


def _cluster(manifest: Manifest) -> InferenceCluster | None:
    try:
        return InferenceCluster.model_validate({**manifest, "status": None})
    except pydantic.ValidationError:
        return None


def live_status(manifest: Manifest, states: States) -> dict[str, Any] | None:
    """``observed_status`` in a live, healthy world (``--assume-ready``): cluster schedulers run.

    A pool of a cluster whose ``spec.scheduler.type`` is KAI or Kueue, with no figure of that
    scheduler written in its status, is observed by it as a running scheduler would: the GPUs of
    the replicas the simulation made Ready there.
    """
    return observed_status(manifest, states, live=True)


def observed_status(manifest: Manifest, states: States, *, live: bool = False) -> dict[str, Any] | None:
    """A manifest's status as a live system would report it now.

    An InferenceCluster publishes the summary of the replicas the simulation composed there
    (``modelplane.capacity.published``), as its function would on its next reconcile, which a
    labelled ModelReplica's change triggers at once. Its simulated ``status.capacity``, if any,
    says what its scheduler (KAI or Kueue) observes in use when it was written. A replica the
    simulation made Ready there is one the scheduler now counts too, so its GPUs are added to
    what was written; otherwise the replica would "explain" GPUs that other workloads hold and
    the pool would look emptier than it is. With ``live``, a cluster's own scheduler (its
    ``spec.scheduler.type``) observes a pool with no written figure, starting from nothing.
    """
    status = manifest.get("status")
    if manifest.get("kind") != "InferenceCluster":
        return dict(status) if isinstance(status, Mapping) else None
    cluster = states.memo("cluster", manifest, _cluster)
    name = cluster.metadata.name if cluster is not None and cluster.metadata is not None else None
    # What the status is worked out from: the cluster, its replicas (and whether each was composed), the classes.
    on = states.replicas_on(name) if isinstance(name, str) else []
    inputs = [
        live,
        *(s.xr for _, s in on),
        *(s.parent is None for _, s in on),
        _CLASSES,
        *(s.xr for _, s in states.of_kind("InferenceClass")),
    ]
    published = states.memo_by("published", manifest, inputs, lambda: _published(manifest, states, live=live))
    return dict(published)


_CLASSES = object()  # between a cluster's replicas and the classes, in what its status is worked out from


def _published(manifest: Manifest, states: States, *, live: bool) -> dict[str, Any]:
    """``observed_status`` of an InferenceCluster, worked out."""
    status = manifest.get("status")
    written_capacity = status.get("capacity") if isinstance(status, Mapping) else None
    capacity = written_capacity if isinstance(written_capacity, Mapping) else {}
    cluster = states.memo("cluster", manifest, _cluster)
    if cluster is None:
        return dict(status or {})
    info = cluster_info(cluster)
    if info is None:
        return dict(status or {})
    replicas = _composed_replicas(info.name, states)
    written = {str(p.get("name")): p for p in capacity.get("pools") or []}
    pools = []
    scheduler = _scheduler_of(cluster) if live else None
    for pool in info.pools:
        entry = written.get(pool.name, {})
        source = entry.get("source")
        if source not in _OBSERVING_SOURCES and scheduler is not None:
            # A running scheduler that nothing written speaks for: it counts what runs on the pool.
            entry, source = {"source": scheduler, "observedInUse": 0, "className": pool.class_name}, scheduler
        if source not in _OBSERVING_SOURCES or entry.get("className", pool.class_name) != pool.class_name:
            pools.append(pool)
            continue
        seen = int(entry.get("observedInUse", entry.get("inUse", 0)))
        ready = sum(r.footprint.total_gpus for h in replicas if h.ready for r in h.roles if r.pool == pool.name)
        pools.append(replace(pool, observed=Observed(Source(source), seen + ready)))
    classes = pool_classes(_classes(states))
    summary = summarize(
        replace(info, pools=tuple(pools)), {n: c.per_node for n, c in classes.items()}, map(Listed, replicas)
    )
    return {**dict(status or {}), "capacity": capacity_status(tuple(pools), classes, summary)}


def _scheduler_of(cluster: InferenceCluster) -> str | None:
    """The observing scheduler (KAI or Kueue) ``spec.scheduler.type`` names, if any."""
    scheduler = cluster.spec.scheduler if cluster.spec is not None else None
    kind = scheduler.type if scheduler is not None else None
    return kind if kind in _OBSERVING_SOURCES else None


def assumed_gateway_cas(loaded: Loaded) -> tuple[dict[str, Any], ...]:
    """The CA Secret each cluster's ServingStack publishes through provider-kubernetes (``ca.crt`` only).

    Live, provider-kubernetes copies it from the workload cluster once the gateway's certificate is
    issued; offline nothing does, and the endpoints verifying the gateway would wait for it forever.
    """
    have = {key_of(o) for o in loaded.others if o.get("kind") == "Secret"}
    data = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nassumed by modelplane preview\n-----END CERTIFICATE-----\n")
    out = []
    for xr in loaded.xrs:
        if xr.get("kind") != "InferenceCluster":
            continue
        name = gateway_ca_secret(str(xr.get("metadata", {}).get("name", "")))
        if ("Secret", CONTROL_PLANE_NAMESPACE, name) in have:
            continue
        meta = {"namespace": CONTROL_PLANE_NAMESPACE, "name": name}
        out.append({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"ca.crt": data.decode()}})
    return tuple(out)


def assumed_kubeconfigs(loaded: Loaded) -> tuple[tuple[dict[str, Any], ...], tuple[str, ...]]:
    """Kubeconfig Secrets for Existing clusters whose Secret is not among the manifests, and notes saying so.

    An Existing cluster is reachable in a healthy world: its kubeconfig Secret
    lives on the control plane, where nobody commits it to a repository.
    """
    have = {key_of(o) for o in loaded.others if o.get("kind") == "Secret"}
    secrets: list[dict[str, Any]] = []
    notes: list[str] = []
    for xr in loaded.xrs:
        spec = xr.get("spec", {})
        if xr.get("kind") != "InferenceCluster" or spec.get("cluster", {}).get("source") != "Existing":
            continue
        ref = spec.get("cluster", {}).get("existing", {}).get("secretRef", {})
        namespace, name = str(ref.get("namespace", "")), str(ref.get("name", ""))
        if not name or ("Secret", namespace, name) in have:
            continue
        key = str(ref.get("key", KUBECONFIG_KEY))
        data = base64.b64encode(b"assumed by modelplane preview --assume-ready").decode()
        secrets.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"namespace": namespace, "name": name},
                "data": {key: data},
            }
        )
        notes.append(
            f"Existing cluster {xr.get('metadata', {}).get('name', '')} is assumed reachable: "
            f"its kubeconfig Secret {namespace}/{name} is not among the manifests"
        )
    return tuple(secrets), tuple(notes)
