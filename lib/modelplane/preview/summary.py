"""The readable summary ``modelplane preview`` prints: per cluster, per deployment, per service."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import pydantic

from modelplane.capacity import PoolCapacity, PoolKey, pool_capacities
from modelplane.preview.fleet import Fleet, XRState
from modelplane.preview.manifests import Key, Manifest
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

_INDENT = "  "
M = TypeVar("M", InferenceCluster, InferenceClass, ModelReplica)


def _name(key: Key) -> str:
    return "/".join(filter(None, key[1:]))


def _condition(xr: Manifest, typ: str) -> Mapping[str, Any] | None:
    for c in xr.get("status", {}).get("conditions", []):
        if c.get("type") == typ:
            found: Mapping[str, Any] = c
            return found
    return None


def _condition_text(xr: Manifest, typ: str) -> str:
    c = _condition(xr, typ)
    if c is None:
        return f"{typ}: unknown"
    text = f"{typ}: {c.get('status', 'Unknown')}"
    if c.get("reason"):
        text += f" ({c['reason']})"
    if c.get("message"):
        text += f": {c['message']}"
    return text


def _of_kind(fleet: Fleet, kind: str) -> list[tuple[Key, XRState]]:
    return [(k, s) for k, s in fleet.states.items() if k[0] == kind]


def _gpus_per_node(cls: Manifest | None) -> int | None:
    """GPUs one node of ``cls`` offers: the per-node count of its DRA devices."""
    if cls is None:
        return None
    return sum(int(d.get("count", 1)) for d in cls.get("spec", {}).get("devices", []) if d.get("claim", "DRA") == "DRA")


def _capacities(fleet: Fleet) -> dict[PoolKey, PoolCapacity]:
    """Pool capacity as the scheduler counts it: declared or observed, minus what replicas hold."""

    def models(kind: str, model: type[M]) -> list[M]:
        parsed = []
        for key, state in fleet.states.items():
            if key[0] == kind:
                try:
                    parsed.append(model.model_validate(state.xr))
                except pydantic.ValidationError:
                    continue  # shown as it is; the function reports what is wrong with it
        return parsed

    return pool_capacities(
        models("InferenceCluster", InferenceCluster),
        models("InferenceClass", InferenceClass),
        models("ModelReplica", ModelReplica),
    )


def _pool_lines(cluster: Manifest, capacities: Mapping[PoolKey, PoolCapacity]) -> list[str]:
    name = cluster.get("metadata", {}).get("name", "")
    lines = []
    for pool in cluster.get("spec", {}).get("nodePools", []):
        cap = capacities.get((name, pool.get("name")))
        if cap is None:
            lines.append(f"pool {pool.get('name')} ({pool.get('className')}): no capacity (class missing or invalid)")
            continue
        over = f", OVERCOMMITTED by {cap.overcommitted}" if cap.overcommitted else ""
        lines.append(
            f"pool {cap.pool} ({cap.class_name}): {cap.nodes} nodes x {cap.per_node} GPUs = {cap.declared} declared, "
            f"{cap.in_use} in use, {cap.free} free (source: {cap.source}){over}"
        )
    return lines


def _section(title: str, rows: Iterable[str]) -> list[str]:
    body = list(rows)
    return [title, *(body or [f"{_INDENT}(none)"]), ""]


def summarize(fleet: Fleet, source: str) -> str:
    """Return the preview's text for ``fleet`` loaded from ``source``."""
    capacities = _capacities(fleet)
    replicas = _of_kind(fleet, "ModelReplica")
    out = [f"Modelplane preview of {source}: {len(fleet.states)} objects, settled after {fleet.passes} pass(es)", ""]

    rows = []
    for key, state in _of_kind(fleet, "InferenceClass"):
        per_node = _gpus_per_node(state.xr)
        rows.append(f"{_INDENT}{_name(key)}: {per_node} accelerator(s) per node; {_condition_text(state.xr, 'Valid')}")
    out += _section("Inference classes", rows)

    rows = []
    for key, state in _of_kind(fleet, "InferenceCluster"):
        spec = state.xr.get("spec", {})
        labels = state.xr.get("metadata", {}).get("labels", {})
        label_text = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "no labels"
        cordoned = " CORDONED" if spec.get("cordoned") else ""
        rows.append(
            f"{_INDENT}{_name(key)}: {spec.get('cluster', {}).get('source', '?')}, "
            f"scheduler {spec.get('scheduler', {}).get('type', 'None')}, "
            f"backend {spec.get('serving', {}).get('backend', 'KServe')}{cordoned}; "
            f"{_condition_text(state.xr, 'Ready')} [{label_text}]"
        )
        rows += [f"{_INDENT * 2}{line}" for line in _pool_lines(state.xr, capacities)]
        landed = [
            f"{_name(k)} on pool(s) {_replica_pools(s.xr)}"
            for k, s in replicas
            if s.xr.get("spec", {}).get("inferenceClusterRef", {}).get("name") == key[2]
        ]
        rows.append(f"{_INDENT * 2}replicas: {'; '.join(landed) if landed else 'none'}")
    out += _section("Inference clusters", rows)

    rows = []
    for key, state in _of_kind(fleet, "ModelDeployment"):
        spec, status = state.xr.get("spec", {}), state.xr.get("status", {})
        rows.append(
            f"{_INDENT}{_name(key)}: {status.get('readyReplicas', 0)}/{spec.get('replicas', 1)} ready; "
            f"{_condition_text(state.xr, 'Scheduled')}"
        )
        rows += [
            f"{_INDENT * 2}{p.get('replica', '?')} -> {p.get('cluster', '?')}" for p in status.get("placements", [])
        ]
    out += _section("Model deployments", rows)

    rows = []
    for key, state in _of_kind(fleet, "ModelService"):
        rows.append(
            f"{_INDENT}{_name(key)}: address {state.xr.get('status', {}).get('address', '(none yet)')}; "
            f"{_condition_text(state.xr, 'Routed')}"
        )
        rows += [f"{_INDENT * 2}{line}" for line in _route_lines(state.composed)]
    out += _section("Model services", rows)

    rows = [
        f"{_INDENT}{_name(k)}: address {s.xr.get('status', {}).get('address', '(none yet)')}"
        for k, s in _of_kind(fleet, "InferenceGateway")
    ]
    out += _section("Inference gateways", rows)

    rows = [
        f"{_INDENT}{str(r.get('severity', '?')).removeprefix('SEVERITY_').capitalize()} "
        f"{key[0]} {_name(key)}: {r.get('message', '')}"
        for key, state in fleet.states.items()
        for r in state.results
    ]
    rows += [f"{_INDENT}Error {k[0]} {_name(k)}: {msg}" for k, msg in fleet.errors.items()]
    out += _section("Function results", rows)
    return "\n".join(out).rstrip() + "\n"


def _replica_pools(xr: Manifest) -> str:
    spec = xr.get("spec", {})
    pools = [spec.get("poolName")] + [spec.get(role, {}).get("poolName") for role in ("prefill", "decode")]
    return ", ".join(str(p) for p in pools if p) or "?"


def _route_lines(composed: Iterable[Manifest]) -> list[str]:
    """A service's HTTPRoute: its path, rewrite and each backend's weight and effective share."""
    lines = []
    for route in composed:
        if route.get("kind") != "HTTPRoute":
            continue
        meta = route.get("metadata", {})
        for rule in route.get("spec", {}).get("rules", []):
            path = next((m.get("path", {}).get("value") for m in rule.get("matches", [])), "?")
            rewrites = [
                f.get("urlRewrite", {}).get("path", {}).get("replacePrefixMatch") for f in rule.get("filters", [])
            ]
            rewrite = next((r for r in rewrites if r), "per backend")
            lines.append(f"route {meta.get('namespace', '')}/{meta.get('name', '')}: {path} -> rewrite {rewrite}")
            refs = rule.get("backendRefs", [])
            total = sum(int(r.get("weight", 1)) for r in refs)
            lines += [
                f"{_INDENT}{r.get('name')}: weight {r.get('weight', 1)} "
                f"({100 * int(r.get('weight', 1)) / total if total else 0:.1f}%)"
                for r in refs
            ]
            if not refs:
                lines.append(f"{_INDENT}no backends")
    return lines
