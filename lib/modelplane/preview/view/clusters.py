"""The infrastructure side of a fleet: classes, clusters with their pools' GPUs, stacks and Helm releases.

A pool's GPUs are counted as the scheduler counts them (``scheduling.view``),
so the table and the placements agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.capacity import PoolCapacity, PoolKey, Source
from modelplane.preview.fleet import Fleet
from modelplane.preview.manifests import Manifest
from modelplane.preview.targets import helm_targets
from modelplane.preview.view.model import ClassView, ClusterView, PoolView, ReleaseView, StackView
from modelplane.preview.view.read import condition, display_name, models, of_kind, per_hour
from modelplane.scheduling.view import build_view, cluster_facts
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster


def _capacities(fleet: Fleet) -> dict[PoolKey, PoolCapacity]:
    """Pool capacity as the scheduler reads it: the fleet view of what each cluster publishes."""
    clusters = models(fleet, "InferenceCluster", InferenceCluster)
    view = build_view(
        [f for f in map(cluster_facts, clusters) if f is not None], models(fleet, "InferenceClass", InferenceClass)
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


def class_views(fleet: Fleet) -> tuple[ClassView, ...]:
    """Each InferenceClass: its GPU product and count per node, and whether it is Valid."""
    rows = []
    for key, state in of_kind(fleet, "InferenceClass"):
        devices = [d for d in state.xr.get("spec", {}).get("devices", []) if d.get("claim", "DRA") == "DRA"]
        first = devices[0] if devices else {}
        product = first.get("attributes", {}).get("productName", {}).get("string", "")
        per_node = int(first["count"]) if "count" in first else None
        rows.append(ClassView(display_name(key), per_node, str(product), condition(state.xr, "Valid")))
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


def cluster_views(fleet: Fleet) -> tuple[ClusterView, ...]:
    """Each InferenceCluster with its pools' GPUs, its ServingStack and the Helm releases it installs."""
    capacities = _capacities(fleet)
    stacks = dict(of_kind(fleet, "ServingStack"))
    releases = helm_targets(fleet)
    rows = []
    for key, state in of_kind(fleet, "InferenceCluster"):
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
                cost=per_hour(state.xr),
            )
        )
    return tuple(rows)


def control_plane_releases(fleet: Fleet) -> tuple[ReleaseView, ...]:
    """The Helm releases installed into the control plane's own cluster."""
    return tuple(_release(r, {}) for r in helm_targets(fleet).get("", ()))
