"""The traffic side of a fleet: each ModelService's route and its backends, and the gateways' addresses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.preview.fleet import Fleet
from modelplane.preview.references import Selectable, selectable, unmatched_selectors
from modelplane.preview.view.backends import route_of
from modelplane.preview.view.model import ServiceView
from modelplane.preview.view.read import condition, display_name, of_kind


def service_views(fleet: Fleet) -> tuple[ServiceView, ...]:
    """Each ModelService: its address, the path and backends its route sends to, selectors that match nothing."""
    endpoints: dict[str, list[dict[str, str]]] = {}
    for key, state in of_kind(fleet, "ModelEndpoint"):
        labels = state.xr.get("metadata", {}).get("labels") or {}
        endpoints.setdefault(key[1], []).append({str(k): str(v) for k, v in labels.items()})
    deployments: dict[str, list[str]] = {}
    for key, _state in of_kind(fleet, "ModelDeployment"):
        deployments.setdefault(key[1], []).append(key[2])
    namespaces: dict[str, Selectable] = {}
    gateways = {key[2]: state.xr for key, state in of_kind(fleet, "InferenceGateway")}
    rows = []
    for key, state in of_kind(fleet, "ModelService"):
        if key[1] not in namespaces:
            namespaces[key[1]] = selectable(endpoints.get(key[1], ()), deployments.get(key[1], ()))
        route = route_of(state.xr, state.composed)
        rows.append(
            ServiceView(
                name=display_name(key),
                address=str(state.xr.get("status", {}).get("address", "")),
                path=route.path,
                routed=condition(state.xr, "Routed"),
                backends=route.backends,
                unmatched=unmatched_selectors(state.xr, namespaces[key[1]]),
                access=access_of(state.xr, gateways),
                limits=limits_of(state.xr),
            )
        )
    return tuple(rows)


def access_of(service: Mapping[str, Any], gateways: Mapping[str, Mapping[str, Any]]) -> str:
    """Who may call ``service``: how its gateway authenticates, then which client ids it allows.

    ``"key: team-a"`` (API key clients), ``"jwt: any"``, ``"key+jwt: any"``, ``"open"`` (auth mode
    None, or a gateway without spec.auth); ``"-"`` when its gateway is not among the manifests.
    """
    spec = service.get("spec") or {}
    gateway = gateways.get(str((spec.get("gatewayRef") or {}).get("name") or "default"))
    if gateway is None:
        return "-"
    auth = (gateway.get("spec") or {}).get("auth")
    if not isinstance(auth, dict) or auth.get("mode") == "None":
        return "open"
    ways = "+".join(w for k, w in (("apiKeys", "key"), ("jwt", "jwt")) if auth.get(k))
    clients = [str(c) for c in (spec.get("access") or {}).get("clients") or []]
    return f"{ways}: {', '.join(sorted(clients)) if clients else 'any'}"


def limits_of(service: Mapping[str, Any]) -> str:
    """The service's ``spec.limits``, a rule each: who, then requests and tokens per minute.

    ``"all: 600 req/min"``, ``"team-a: 60 req/min, 20000 tok/min; all: 600 req/min"``; ``"-"`` when
    it sets none. Clients unset (or ``all``) is every caller.
    """
    rules = (service.get("spec") or {}).get("limits")
    if not isinstance(rules, list) or not rules:
        return "-"
    said = []
    for rule in rules:
        if not isinstance(rule, dict):
            continue
        clients = rule.get("clients")
        ids = [str(c) for c in clients] if isinstance(clients, list) else [str(clients)] if clients else []
        who = "all" if not ids or "all" in ids else ", ".join(ids)
        rates = [
            f"{rule[k]} {unit}/min"
            for k, unit in (("requestsPerMinute", "req"), ("tokensPerMinute", "tok"))
            if rule.get(k)
        ]
        said.append(f"{who}: {', '.join(rates) or '-'}")
    return "; ".join(said) or "-"


def gateway_addresses(fleet: Fleet) -> dict[str, str]:
    """Each InferenceGateway's address, by name."""
    return {
        display_name(k): str(s.xr.get("status", {}).get("address", "")) for k, s in of_kind(fleet, "InferenceGateway")
    }
