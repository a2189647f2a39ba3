"""In-cluster routing of a fleet: each deployment's ModelPool per cluster, its InferencePool, picker and monitors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.names import CLUSTER_LABEL, cluster_label, is_routing_pool_key
from modelplane.preview.fleet import Fleet
from modelplane.preview.view.model import PoolRouteView
from modelplane.preview.view.read import display_name, of_kind
from modelplane.routing.picker import Mode, routing_of

_RESOURCE_NAME = "crossplane.io/composition-resource-name"


def _remote(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The manifest an Object carries ({} for anything else)."""
    if obj.get("kind") != "Object":
        return {}
    return obj.get("spec", {}).get("forProvider", {}).get("manifest") or {}


def _pod_monitors(fleet: Fleet) -> dict[tuple[str, str, str], int]:
    """PodMonitors the replicas compose, by (namespace, deployment, cluster): the cluster named as the pools name it."""
    out: dict[tuple[str, str, str], int] = {}
    for key, state in of_kind(fleet, "ModelReplica"):
        spec = state.xr.get("spec", {})
        deployment = str(spec.get("deploymentRef", {}).get("name", ""))
        cluster = str(spec.get("inferenceClusterRef", {}).get("name", ""))
        for obj in state.composed:
            if _remote(obj).get("kind") == "PodMonitor":
                where = (key[1], deployment, cluster)
                out[where] = out.get(where, 0) + 1
    return out


def _weights(composed: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The weight of the pool endpoint a deployment composes for each cluster, by the cluster's label."""
    out = {}
    for obj in composed:
        part = str(obj.get("metadata", {}).get("annotations", {}).get(_RESOURCE_NAME, ""))
        if is_routing_pool_key(part) and obj.get("kind") == "ModelEndpoint":
            cluster = str(obj.get("metadata", {}).get("labels", {}).get(CLUSTER_LABEL, ""))
            out[cluster] = int(obj.get("spec", {}).get("weight", 0))
    return out


def _pools(fleet: Fleet) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """What each ModelPool composes on its cluster, by (namespace, deployment), then cluster."""
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for key, state in of_kind(fleet, "ModelPool"):
        spec = state.xr.get("spec", {})
        deployment = str(spec.get("deploymentRef", {}).get("name", ""))
        cluster = str(spec.get("inferenceClusterRef", {}).get("name", ""))
        entry: dict[str, Any] = {}
        for obj in state.composed:
            manifest = _remote(obj)
            kind = str(manifest.get("kind", ""))
            if kind == "InferencePool":
                entry["pool"] = str(manifest.get("metadata", {}).get("name", ""))
                entry["failure"] = str(manifest.get("spec", {}).get("endpointPickerRef", {}).get("failureMode", ""))
            elif kind in ("ServiceMonitor", "PrometheusRule"):
                entry.setdefault("monitors", []).append(kind)
            elif kind == "InferenceObjective":
                entry["priority"] = manifest.get("spec", {}).get("priority")
        out.setdefault((key[1], deployment), {})[cluster] = entry
    return out


def pool_views(fleet: Fleet) -> tuple[PoolRouteView, ...]:
    """Each deployment's pool on each cluster: picker profile, weight (Ready replicas there) and monitors."""
    pod_monitors = _pod_monitors(fleet)
    pools = _pools(fleet)
    rows = []
    for key, state in of_kind(fleet, "ModelDeployment"):
        routing = routing_of(state.xr.get("spec", {}).get("routing"))
        if routing.mode is not Mode.POOL:
            continue
        profile = "P/D" if state.xr.get("spec", {}).get("decode") else str(routing.picker.profile)
        weights = _weights(state.composed)
        for cluster, entry in sorted(pools.get((key[1], key[2]), {}).items()):
            if "pool" not in entry:
                continue
            podmonitors = pod_monitors.get((key[1], key[2], cluster), 0)
            monitors = ([f"{podmonitors} PodMonitor"] if podmonitors else []) + sorted(entry.get("monitors", []))
            rows.append(
                PoolRouteView(
                    deployment=display_name(key),
                    cluster=cluster,
                    pool=entry["pool"],
                    profile=profile,
                    failure_mode=entry.get("failure", ""),
                    picker_replicas=routing.picker.replicas,
                    weight=weights.get(cluster_label(cluster)),
                    priority=entry.get("priority"),
                    monitors=tuple(monitors),
                )
            )
    return tuple(rows)
