"""Decide a ModelService's route: which endpoints it sends to, with what weights, tiers and rewrites."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from modelplane.layout import CONDITION, METADATA, Layout
from modelplane.names import fallback_backend_name
from modelplane.routing.backend import BACKEND_GROUP
from modelplane.routing.gateway import GATEWAY_API_VERSION, GATEWAY_GROUP, GatewayRef
from modelplane.routing.unavailable import unavailable_ref
from modelplane.routing.urls import EndpointURL
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
    "spec": {
        "url": str,
        "host": str,
        "rewritePath": str,
        "weight": int,
        "tls": {"hostname": str},
        "credentials": {"secretRef": {"name": str}, "header": str},
    },
    "status": {"conditions": [CONDITION], "backendName": str, "credentialsFilterName": str},
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
        url: Its parsed ``spec.url`` (None when malformed): a fallback Backend copy is built from it.
        credentials: The HTTPRouteFilter injecting its credentials (``status.credentialsFilterName``).
        credentials_secret: The Secret of its ``spec.credentials`` (set with ``credentials`` only).
        credentials_header: The header they are sent in (``spec.credentials.header``).
        private_ca: Whether its upstream is verified against a private CA (``spec.tls``): the
            BackendTLSPolicy targets the endpoint's own Backend, so a fallback copy could not verify it.
    """

    name: str
    labels: Mapping[str, str]
    ready: bool
    backend: str | None
    rewrite_path: str = "/"
    hostname: str | None = None
    weight: int = 1
    url: EndpointURL | None = None
    credentials: str | None = None
    private_ca: bool = False
    credentials_secret: str | None = None
    credentials_header: str = "Authorization"

    @property
    def routable(self) -> bool:
        """Whether traffic can be sent to it: Ready, with a Backend."""
        return self.ready and bool(self.backend)


@dataclass(frozen=True)
class Selection:
    """One ``spec.endpoints[]`` entry: its selector, weight and priority tier (0 the primary)."""

    selector: LabelSelector
    weight: int
    tier: int = 0


@dataclass(frozen=True)
class GroupResult:
    """What one entry matched: every matching endpoint, and those traffic can go to."""

    index: int
    weight: int
    matched: tuple[str, ...]
    routable: tuple[str, ...]
    tier: int = 0


@dataclass(frozen=True)
class BackendRef:
    """One backendRef of the route: its endpoint, its share within its tier, and whether it is a fallback.

    A fallback is sent through the service's own fallback Backend copy of the endpoint, which Envoy
    Gateway uses only while the route's other backends are unhealthy.
    """

    endpoint: Endpoint
    share: Share
    tier: int = 0
    fallback: bool = False
    # Its weight within its tier whether or not the tier is active: Envoy AI Gateway's priorities fail
    # over through every tier per request, so each tier carries its weights (0 when not routable).
    tier_weight: int = 0


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

    @property
    def tiers(self) -> tuple[int, ...]:
        """The distinct tiers of the entries, sorted."""
        return tuple(sorted({g.tier for g in self.groups}))

    @property
    def active_tier(self) -> int | None:
        """The tier traffic goes to: the lowest with a backendRef of positive weight that is no fallback."""
        return min((b.tier for b in self.backends if b.share.weight > 0 and not b.fallback), default=None)

    @property
    def fails_over(self) -> bool:
        """Whether Envoy fails over per request: some backendRef is a fallback."""
        return any(b.fallback for b in self.backends)


def plan_route(selections: Sequence[Selection], endpoints: Sequence[Endpoint]) -> RoutePlan:
    """Match each selection's endpoints and split its weight over the routable ones, by their own weights.

    1. Each endpoint belongs to the lowest tier of the selections matching it (a primary that a
       fallback selector also matches stays a primary).
    2. Weights are split within each tier; traffic goes to the lowest tier where some endpoint gets
       weight (the active tier), every other tier's endpoints stay in the route with weight 0.
    3. The tier above the active one is a fallback (its shares, through fallback Backend copies)
       when Envoy can fail over to it per request: every one of its endpoints has a parsed URL (and
       no private CA, which only its own Backend's BackendTLSPolicy verifies) and no backendRef of
       the route carries a filter (Envoy Gateway puts a rule's backends in one cluster, whose
       priorities fail over, only then). Otherwise the control plane fails over:
       the tier above gets traffic once no endpoint below it is Ready.

    Endpoints that are matched but not routable are counted in ``matched``; those
    with a Backend (not Ready, e.g. a replica that stopped serving) stay in the
    route with weight 0, so a readiness flap changes a weight, not the route's
    references; those without one (none composed yet) are left out.
    """
    ordered = sorted(endpoints, key=lambda e: e.name)
    by_name = {e.name: e for e in ordered}
    # 1. Each endpoint's tier.
    tier_of: dict[str, int] = {}
    for selection in selections:
        for e in ordered:
            if selection.selector.matches(e.labels):
                tier_of[e.name] = min(tier_of.get(e.name, selection.tier), selection.tier)
    groups = []
    for index, selection in enumerate(selections):
        matched = tuple(e.name for e in ordered if selection.selector.matches(e.labels))
        routable = tuple(n for n in matched if by_name[n].routable and tier_of[n] == selection.tier)
        groups.append(GroupResult(index, selection.weight, matched, routable, selection.tier))
    # 2. Weights within each tier; the active tier is the lowest with weight.
    shares: dict[int, list[Share]] = {}
    for tier in sorted({g.tier for g in groups}):
        tiered = [g for g in groups if g.tier == tier]
        shares[tier] = split_weights(
            [Group(g.weight, g.routable, {n: by_name[n].weight for n in g.routable}) for g in tiered]
        )
    active = next((t for t, s in shares.items() if any(x.weight > 0 for x in s)), None)
    refs: dict[str, BackendRef] = {}
    for tier, tiered_shares in shares.items():
        for s in tiered_shares:
            share = s if tier == active else Share(s.endpoint, 0, Fraction(0))
            refs[s.endpoint] = BackendRef(by_name[s.endpoint], share, tier, tier_weight=s.weight)
    for name in sorted(tier_of):
        if name not in refs and by_name[name].backend:
            refs[name] = BackendRef(by_name[name], Share(name, 0, Fraction(0)), tier_of[name])
    # 3. The tier above the active one as Envoy's fallback, when it can be.
    if active is not None:
        standby = [r for r in refs.values() if r.tier == active + 1]
        copyable = all(r.endpoint.url and not r.endpoint.private_ca for r in standby)
        if standby and copyable and not _needs_backend_filters(list(refs.values())):
            by_share = {x.endpoint: x for x in shares.get(active + 1, [])}
            for r in standby:
                share = by_share.get(r.endpoint.name, r.share)
                refs[r.endpoint.name] = BackendRef(r.endpoint, share, r.tier, fallback=True, tier_weight=r.tier_weight)
    return RoutePlan(tuple(groups), tuple(refs[n] for n in sorted(refs)))


def _needs_backend_filters(refs: Sequence[BackendRef]) -> bool:
    """Whether a backendRef of the route carries a filter (a Host, a path of its own, credentials)."""
    paths = {r.endpoint.rewrite_path for r in refs if r.endpoint.routable}
    return len(paths) > 1 or any(r.endpoint.hostname or r.endpoint.credentials for r in refs)


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
    each see their own), and an endpoint with credentials the HTTPRouteFilter
    that injects them (on its backendRef only). A fallback is referenced through
    the service's fallback Backend copy of its endpoint. While no endpoint gets traffic the rule answers the
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
            "name": fallback_backend_name(name, b.endpoint.name) if b.fallback else b.endpoint.backend,
            "weight": b.share.weight,
        }
        path = b.endpoint.rewrite_path if per_backend_path else None
        filters = [_rewrite(path, b.endpoint.hostname)] if path or b.endpoint.hostname else []
        if b.endpoint.credentials:
            filters.append(
                {
                    "type": "ExtensionRef",
                    "extensionRef": {"group": BACKEND_GROUP, "kind": "HTTPRouteFilter", "name": b.endpoint.credentials},
                }
            )
        if filters:
            ref["filters"] = filters
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
