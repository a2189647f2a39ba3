"""Decide a ModelService's route: which endpoints it sends to, with what weights and rewrites."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from modelplane.layout import CONDITION, METADATA, Layout
from modelplane.routing.backend import BACKEND_GROUP
from modelplane.routing.gateway import GATEWAY_API_VERSION, GATEWAY_GROUP, GatewayRef
from modelplane.routing.unavailable import unavailable_ref
from modelplane.routing.weights import Group, Share, split_weights
from modelplane.scheduling.labels import LabelSelector

# What a ModelService reads of its observed HTTPRoute, and of each ModelEndpoint it may route to.
ROUTE: Layout = {"status": {"parents": [{"parentRef": {"name": str, "namespace": str}, "conditions": [CONDITION]}]}}
ENDPOINT: Layout = {
    # The controller reference tells an endpoint modelplane composed from a hand-made one (provenance).
    "metadata": {
        **METADATA,
        "ownerReferences": [{"apiVersion": str, "kind": str, "name": str, "controller": bool}],
    },
    "spec": {"url": str, "host": str, "rewritePath": str, "weight": int},
    "status": {"conditions": [CONDITION], "backendName": str},
}

# A token stream can run for minutes: "0s" disables the request timeout (Gateway API timeouts).
NO_TIMEOUT = "0s"


@dataclass(frozen=True)
class Endpoint:
    """A ModelEndpoint as routing sees it.

    Attributes:
        name: The endpoint's name.
        labels: Its labels, which selectors match.
        ready: Whether it reports Ready.
        backend: The Backend it composed (``status.backendName``), if any.
        rewrite_path: The path prefix requests reach it with.
        hostname: The Host header sent upstream: the endpoint's spec.host, else its URL's DNS name;
            None for an IP address.
        weight: Its share of a selector's weight relative to the others it matches (``spec.weight``).
    """

    name: str
    labels: Mapping[str, str]
    ready: bool
    backend: str | None
    rewrite_path: str = "/"
    hostname: str | None = None
    weight: int = 1

    @property
    def routable(self) -> bool:
        """Whether traffic can be sent to it: Ready, with a Backend."""
        return self.ready and bool(self.backend)


@dataclass(frozen=True)
class Selection:
    """One ``spec.endpoints[]`` entry: its selector and weight."""

    selector: LabelSelector
    weight: int


@dataclass(frozen=True)
class GroupResult:
    """What one entry matched: every matching endpoint, and those traffic can go to."""

    index: int
    weight: int
    matched: tuple[str, ...]
    routable: tuple[str, ...]


@dataclass(frozen=True)
class BackendRef:
    """One backendRef of the route."""

    endpoint: Endpoint
    share: Share


@dataclass(frozen=True)
class RoutePlan:
    """The route of a ModelService."""

    groups: tuple[GroupResult, ...]
    backends: tuple[BackendRef, ...]

    @property
    def rewrite_paths(self) -> tuple[str, ...]:
        """The distinct rewrite paths of the attached routable endpoints, sorted."""
        return tuple(sorted({b.endpoint.rewrite_path for b in self.backends if b.endpoint.routable}))

    @property
    def serving(self) -> bool:
        """Whether some endpoint gets traffic."""
        return any(b.share.weight > 0 for b in self.backends)


def plan_route(selections: Sequence[Selection], endpoints: Sequence[Endpoint]) -> RoutePlan:
    """Match each selection's endpoints and split its weight over the routable ones, by their own weights.

    Endpoints that are matched but not routable are counted in ``matched``; those
    with a Backend (not Ready, e.g. a replica that stopped serving) stay in the
    route with weight 0, so a readiness flap changes a weight, not the route's
    references; those without one (none composed yet) are left out.
    """
    ordered = sorted(endpoints, key=lambda e: e.name)
    by_name = {e.name: e for e in ordered}
    groups = []
    for index, selection in enumerate(selections):
        matched = tuple(e.name for e in ordered if selection.selector.matches(e.labels))
        routable = tuple(n for n in matched if by_name[n].routable)
        groups.append(GroupResult(index, selection.weight, matched, routable))
    shares = split_weights([Group(g.weight, g.routable, {n: by_name[n].weight for n in g.routable}) for g in groups])
    listed = {s.endpoint for s in shares}
    idle = {n for g in groups for n in g.matched if n not in listed and by_name[n].backend}
    shares += [Share(n, 0, Fraction(0)) for n in idle]
    backends = tuple(BackendRef(by_name[s.endpoint], s) for s in sorted(shares, key=lambda s: s.endpoint))
    return RoutePlan(tuple(groups), backends)


def _rewrite(path: str | None = None, hostname: str | None = None) -> dict[str, Any]:
    rewrite: dict[str, Any] = {}
    if hostname:
        rewrite["hostname"] = hostname
    if path:
        rewrite["path"] = {"type": "ReplacePrefixMatch", "replacePrefixMatch": path}
    return {"type": "URLRewrite", "urlRewrite": rewrite}


def http_route(name: str, namespace: str, prefix: str, gateway: GatewayRef, plan: RoutePlan) -> dict[str, Any]:
    """The HTTPRoute: ``prefix`` on ``gateway``, rewritten to the endpoints' path, weighted to their Backends.

    One rewrite path is a rule-level filter; endpoints with different rewrite
    paths each carry theirs as a backendRef filter. A DNS-named endpoint gets
    its host name as the Host header (a backendRef filter, so mixed upstreams
    each see their own). While no endpoint gets traffic the rule answers the
    service's 503 (``unavailable``) instead, with no backend.
    """
    if not plan.serving:
        unavailable = {
            "matches": [{"path": {"type": "PathPrefix", "value": prefix}}],
            "filters": [unavailable_ref(name)],
        }
        return _route(name, namespace, gateway, unavailable)
    per_backend_path = len(plan.rewrite_paths) > 1
    refs = []
    for b in plan.backends:
        ref: dict[str, Any] = {
            "group": BACKEND_GROUP,
            "kind": "Backend",
            "name": b.endpoint.backend,
            "weight": b.share.weight,
        }
        path = b.endpoint.rewrite_path if per_backend_path else None
        if path or b.endpoint.hostname:
            ref["filters"] = [_rewrite(path, b.endpoint.hostname)]
        refs.append(ref)
    rule: dict[str, Any] = {"matches": [{"path": {"type": "PathPrefix", "value": prefix}}]}
    if not per_backend_path:
        rule["filters"] = [_rewrite(plan.rewrite_paths[0] if plan.rewrite_paths else "/")]
    if refs:
        rule["backendRefs"] = refs
    return _route(name, namespace, gateway, rule)


def _route(name: str, namespace: str, gateway: GatewayRef, rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parentRefs": [
                {"group": GATEWAY_GROUP, "kind": "Gateway", "name": gateway.name, "namespace": gateway.namespace}
            ],
            "rules": [{**rule, "timeouts": {"request": NO_TIMEOUT}}],
        },
    }


def route_accepted(observed: Mapping[str, Any] | None, gateway: GatewayRef) -> bool:
    """Whether the gateway reports the observed route (conformed to ``ROUTE``) Accepted with its references resolved."""
    for parent in ((observed or {}).get("status") or {}).get("parents") or []:
        ref = parent.get("parentRef") or {}
        if ref.get("name") != gateway.name or ref.get("namespace", gateway.namespace) != gateway.namespace:
            continue
        types = {c.get("type"): c.get("status") for c in parent.get("conditions") or []}
        return types.get("Accepted") == "True" and types.get("ResolvedRefs") == "True"
    return False
