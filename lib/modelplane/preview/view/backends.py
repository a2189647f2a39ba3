"""A ModelService's backends as the route it composed sends to them: weight, share, tier and how it fails over.

The route is the service's HTTPRoute or, for a service with token limits or more tiers than Envoy
Gateway's Backend fallback gives, the AIGatewayRoute (key ``ai-route``) composed in its place.
Nothing is recomputed: a backendRef's endpoint is read from what the service composed (its fallback
Backend copies, its AIServiceBackends), an endpoint's tier from ``status.endpoints`` (what each
``spec.endpoints[]`` entry matched) and the entry's ``tier``, as the function decided them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.names import FALLBACK_KEY_PREFIX
from modelplane.preview.view.model import BackendView

_RESOURCE_NAME = "crossplane.io/composition-resource-name"


@dataclass(frozen=True)
class Route:
    """What a service's route says: the path it matches ("" for an AIGatewayRoute, which matches a header)."""

    path: str
    backends: tuple[BackendView, ...]


@dataclass(frozen=True)
class _Ref:
    """One backendRef, with the Envoy priority level it is in (its share is of that level's weight)."""

    rule: int
    name: str  # the endpoint's Backend, which compose-model-endpoint names as the endpoint
    weight: int
    level: int  # 0 the primary; 1 a fallback copy on the HTTPRoute; the backendRef priority on an AIGatewayRoute
    fallback: bool = False
    priority: int | None = None


def route_of(service: Mapping[str, Any], composed: Sequence[Mapping[str, Any]]) -> Route:
    """The route ``service`` composed (``composed``: its composed resources), its backends sorted by tier, then name.

    A backend's ``share`` is its percent of its priority level's weight: the primary's, or the
    fallback's (which takes the traffic per request while the primary's upstreams fail). Its
    ``tier`` is set only when the service has more than one tier, so single-tier services read as
    they always did.
    """
    ai_routes = [o for o in composed if o.get("kind") == "AIGatewayRoute"]
    path, refs = _ai_refs(ai_routes, composed) if ai_routes else _http_refs(composed)
    tiers = _tiers(service)
    totals: dict[tuple[int, int], int] = {}
    for r in refs:
        totals[(r.rule, r.level)] = totals.get((r.rule, r.level), 0) + r.weight
    backends = [
        BackendView(
            r.name,
            r.weight,
            round(100 * r.weight / total, 1) if (total := totals[(r.rule, r.level)]) else 0.0,
            tier=tiers.get(r.name),
            fallback=r.fallback,
            priority=r.priority,
        )
        for r in refs
    ]
    return Route(path, tuple(sorted(backends, key=lambda b: (b.tier or 0, b.name))))


def _http_refs(composed: Sequence[Mapping[str, Any]]) -> tuple[str, list[_Ref]]:
    """The HTTPRoute's path and backendRefs; one naming a fallback Backend copy is Envoy's per-request fallback."""
    copies = {
        str(_map(o.get("metadata")).get("name", "")): key.removeprefix(FALLBACK_KEY_PREFIX)
        for o in composed
        if o.get("kind") == "Backend" and (key := _key(o)).startswith(FALLBACK_KEY_PREFIX)
    }
    path = ""
    refs: list[_Ref] = []
    for route in (o for o in composed if o.get("kind") == "HTTPRoute"):
        for index, rule in enumerate(_list(_map(route.get("spec")).get("rules"))):
            matches = _list(rule.get("matches"))
            path = path or next((str(_map(m.get("path")).get("value", "")) for m in matches), "")
            for ref in _list(rule.get("backendRefs")):
                name = str(ref.get("name", ""))
                fallback = name in copies
                weight = _int(ref.get("weight"), 1)
                refs.append(_Ref(index, copies.get(name, name), weight, int(fallback), fallback=fallback))
    return path, refs


def _ai_refs(routes: Sequence[Mapping[str, Any]], composed: Sequence[Mapping[str, Any]]) -> tuple[str, list[_Ref]]:
    """The AIGatewayRoute's backendRefs, each named as the Backend its AIServiceBackend wraps, with its priority."""
    wrapped = {
        str(_map(o.get("metadata")).get("name", "")): str(_map(_map(o.get("spec")).get("backendRef")).get("name", ""))
        for o in composed
        if o.get("kind") == "AIServiceBackend"
    }
    refs: list[_Ref] = []
    for route in routes:
        for index, rule in enumerate(_list(_map(route.get("spec")).get("rules"))):
            for ref in _list(rule.get("backendRefs")):
                name = str(ref.get("name", ""))
                priority = _int(ref.get("priority"), -1)
                known = priority if priority >= 0 else None
                weight = _int(ref.get("weight"), 1)
                refs.append(_Ref(index, wrapped.get(name) or name, weight, known or 0, priority=known))
    return "", refs


def _tiers(service: Mapping[str, Any]) -> dict[str, int]:
    """Each matched endpoint's tier (the lowest of the entries that matched it); none when there is one tier."""
    entries = _list(_map(service.get("spec")).get("endpoints"))
    tier_of_entry = [_int(e.get("tier"), 0) for e in entries]
    if len(set(tier_of_entry)) < 2:
        return {}
    out: dict[str, int] = {}
    for matched in _list(_map(service.get("status")).get("endpoints")):
        index = _int(matched.get("index"), -1)
        if not 0 <= index < len(tier_of_entry):
            continue
        names = matched.get("endpoints")
        for name in names if isinstance(names, list) else []:
            out[str(name)] = min(out.get(str(name), tier_of_entry[index]), tier_of_entry[index])
    return out


def _key(obj: Mapping[str, Any]) -> str:
    return str(_map(_map(obj.get("metadata")).get("annotations")).get(_RESOURCE_NAME, ""))


def _map(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (a malformed field reads as unset)."""
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Mapping[str, Any]]:
    """``value``'s mappings when it is a list (anything malformed is left out)."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _int(value: object, default: int) -> int:
    """``value`` as an int (a YAML number may read as a float); ``default`` when it is none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(value)
