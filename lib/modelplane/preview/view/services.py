"""The traffic side of a fleet: each ModelService's route and its backends, and the gateways' addresses."""

from __future__ import annotations

from modelplane.preview.fleet import Fleet
from modelplane.preview.references import Selectable, selectable, unmatched_selectors
from modelplane.preview.view.model import BackendView, ServiceView
from modelplane.preview.view.read import condition, display_name, of_kind


def service_views(fleet: Fleet) -> tuple[ServiceView, ...]:
    """Each ModelService: its address, the path and backends its HTTPRoute sends to, selectors that match nothing."""
    endpoints: dict[str, list[dict[str, str]]] = {}
    for key, state in of_kind(fleet, "ModelEndpoint"):
        labels = state.xr.get("metadata", {}).get("labels") or {}
        endpoints.setdefault(key[1], []).append({str(k): str(v) for k, v in labels.items()})
    deployments: dict[str, list[str]] = {}
    for key, _state in of_kind(fleet, "ModelDeployment"):
        deployments.setdefault(key[1], []).append(key[2])
    namespaces: dict[str, Selectable] = {}
    rows = []
    for key, state in of_kind(fleet, "ModelService"):
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
                name=display_name(key),
                address=str(state.xr.get("status", {}).get("address", "")),
                path=path,
                routed=condition(state.xr, "Routed"),
                backends=tuple(sorted(backends, key=lambda b: b.name)),
                unmatched=unmatched_selectors(state.xr, namespaces[key[1]]),
            )
        )
    return tuple(rows)


def gateway_addresses(fleet: Fleet) -> dict[str, str]:
    """Each InferenceGateway's address, by name."""
    return {
        display_name(k): str(s.xr.get("status", {}).get("address", "")) for k, s in of_kind(fleet, "InferenceGateway")
    }
