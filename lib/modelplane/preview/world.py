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

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from modelplane.preview.fleet import merge_status

Manifest = Mapping[str, Any]

# A fixed time, so that the simulated world renders the same every time.
_TIME = "2025-01-01T00:00:00Z"
# Documentation address ranges (RFC 5737): workload clusters' gateways, the control plane's.
_WORKLOAD_NET = "198.51.100"
_CONTROL_PLANE_NET = "203.0.113"
_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"


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
