"""The ModelService function: one HTTPRoute on the InferenceGateway, weighted over the matched endpoints.

Each call asks for the service's InferenceGateway and the ModelEndpoints its
selectors can match: by label, one requirement per ``spec.endpoints[]`` entry,
when every selector is matchLabels only; else every ModelEndpoint of its
namespace, of which only those some selector matches are read whole. Each
``spec.endpoints[]`` entry's weight is split over the Ready endpoints its
selector matches in proportion to their ``spec.weight`` (evenly by default; a
deployment's pool endpoint weighs its cluster's Ready replicas); the route sends ``/<namespace>/<name>``
to their Backends, rewritten to the endpoints' ``rewritePath``. A missing
gateway keeps the route composed before; a service with no endpoint to send
to keeps its route (so its address stays), which answers 503 through the
service's HTTPRouteFilter, and says ``NoEndpoints``. An endpoint carrying a
``modelplane.ai/`` label that its ModelDeployment did not compose (its controller
reference) gets no traffic, and a warning names it (``modelplane.routing.provenance``).
Entries carry a priority tier: traffic goes to the lowest tier with a Ready endpoint, and the
tier above it is Envoy's per-request fallback when the route allows (``failover``); tiers with
a gap keep what was composed and say why. More tiers than Envoy Gateway's two need the
gateway's Envoy AI Gateway: the service is then routed by an AIGatewayRoute with a priority per tier.
``spec.limits`` become the route's BackendTrafficPolicy; token limits route the service
through Envoy AI Gateway instead (``compose_model_service.limits``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from compose_model_service import limits
from compose_model_service.routes import write_route
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import keep_all, parse_or_keep, wait
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.structs import labels_at
from modelplane.fnkit.xr import name_of, namespace_of
from modelplane.kinds import API_VERSION
from modelplane.layout import Layout
from modelplane.names import (
    ACCESS_KEY,
    ROUTE_KEY,
    SERVING_ANNOTATION,
    TRAFFIC_KEY,
    UNAVAILABLE_KEY,
    access_policy_name,
    service_path,
    traffic_policy_name,
)
from modelplane.problems import Problem, describe
from modelplane.readiness import readiness_of
from modelplane.routing import (
    CONTROLLER_NAME,
    SUPPORTS_BACKEND_PATH_REWRITE,
    BackendRef,
    Endpoint,
    EndpointURL,
    GatewayRef,
    HostKind,
    InvalidURLError,
    RoutePlan,
    Selection,
    gateway_ref,
    parse_url,
    plan_route,
    route_accepted,
    unavailable_filter,
)
from modelplane.routing.auth import access_policy
from modelplane.routing.limits import LimitsPlan
from modelplane.routing.provenance import refusal
from modelplane.routing.route import ENDPOINT, ROUTE
from modelplane.routing.tiers import FALLBACK_LEVELS, tier_problem
from modelplane.routing.traffic import traffic_policy
from modelplane.routing.unavailable import unavailable_filter_name
from modelplane.scheduling.labels import LabelSelector, Operator
from modelplane.scheduling.labels import Requirement as LabelRequirement
from modelplane_models.model_service import Access, ModelService, Selector

GATEWAY = Requirement("gateway", API_VERSION, "InferenceGateway")
ENDPOINTS = "endpoints"
# What the service reads of its InferenceGateway.
_GATEWAY: Layout = {"status": {"address": str}, "spec": limits.GATEWAY_SPEC}


@dataclass(frozen=True)
class _Service:
    """The service being composed."""

    name: str
    namespace: str
    gateway: str


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Resolve the gateway and endpoints, plan the route, write it, then status and conditions."""
    xr = parse_or_keep(ledger, log, ModelService, _invalid)
    if xr is None:
        return
    spec = xr.spec
    gateway_name = (spec.gatewayRef.name if spec and spec.gatewayRef else None) or "default"
    service = _Service(name_of(xr), namespace_of(xr), gateway_name)
    entries = list(spec.endpoints) if spec else []
    tier_list = [e.tier or 0 for e in entries]
    gaps = tier_problem(tier_list, levels=len(tier_list))
    if gaps is not None:
        keep_all(ledger, log, Condition(Type.ROUTED, Status.FALSE, Reason.INVALID_SPEC, gaps.message))
        return
    wanted = _request(rsp, service, [e.selector for e in entries])
    if any(name not in req.required_resources for name in (GATEWAY.name, *wanted)):
        wait(ledger, log, Type.ROUTED, Reason.WAITING_FOR_GATEWAY, "reading the gateway and endpoints")
        return
    gateways = list(inputs.required(req, rsp, GATEWAY.name, _GATEWAY))
    if not gateways:
        message = f"InferenceGateway {gateway_name!r} (spec.gatewayRef.name) does not exist"
        keep_all(ledger, log, Condition(Type.ROUTED, Status.FALSE, Reason.GATEWAY_NOT_FOUND, message))
        return
    many_tiers = len(set(tier_list)) > FALLBACK_LEVELS
    tiers = None if limits.ai_gateway_enabled(gateways[0]) else tier_problem(tier_list)
    if tiers is not None:
        keep_all(ledger, log, Condition(Type.ROUTED, Status.FALSE, Reason.UNSUPPORTED_TIERS, tiers.message))
        return
    selections = [
        Selection(_selector(e.selector), e.weight if e.weight is not None else 1, e.tier or 0) for e in entries
    ]
    refused: list[str] = []
    plan = plan_route(selections, list(_endpoints(req, rsp, service.namespace, wanted, selections, refused)))
    ref = gateway_ref(gateway_name)
    path = service_path(service.namespace, service.name)
    accepted = route_accepted(inputs.observed(req, rsp, ROUTE_KEY, ROUTE), ref)
    # Always composed, so the route can point at it the moment the last endpoint stops serving.
    ledger.put(UNAVAILABLE_KEY, unavailable_filter(service.name, service.namespace), ready=True)
    limited = limits.plan_of(spec, gateways[0])
    written = write_route(
        req,
        rsp,
        ledger,
        service=(service.name, service.namespace),
        ref=ref,
        path=path,
        plan=plan,
        limited=limited,
        many_tiers=many_tiers,
        accepted=accepted,
    )
    ai, accepted = written.ai, written.accepted
    refused += written.refused
    _put_traffic(ledger, service, limited, written.traffic_parts)
    _put_access(ledger, service, spec.access if spec else None)
    for message in refused:
        response.warning(rsp, message)
        log.info("endpoint refused", message=message)
    _write_status(rsp, service, plan, gateways[0], "" if ai else path)
    limits.report(rsp, limited, service.namespace, service.name, ai=ai)
    condition = _routed(plan, ref, limits.where(path, service.namespace, service.name, ai=ai), service.name, refused)
    if condition.status != Status.TRUE:
        response.warning(rsp, condition.message)
        log.info("not routed", reason=str(condition.reason), message=condition.message)
    set_conditions(rsp, condition)
    set_ready(rsp, ready=accepted and plan.serving)


FunctionRunner = functools.partial(ComposeRunner, compose)


def _put_access(ledger: Ledger, service: _Service, access: Access | None) -> None:
    """Write the SecurityPolicy narrowing the service's callers to ``spec.access.clients``, if set."""
    clients = [c.root for c in access.clients or []] if access else []
    if clients:
        policy = access_policy(access_policy_name(service.name), service.namespace, service.name, clients)
        ledger.put(ACCESS_KEY, policy, ready=ACCESS_KEY in ledger.req.observed.resources)
    ledger.remove([ACCESS_KEY], "spec.access.clients is not set: every caller the gateway authenticates may call")


def _put_traffic(ledger: Ledger, service: _Service, limited: LimitsPlan, failover_parts: dict[str, Any]) -> None:
    """Write the route's one BackendTrafficPolicy (``modelplane.routing.traffic``): each feature adds its part."""
    parts = {**failover_parts, "rateLimit": limits.rate_limit_part(ledger.req, limited)}
    policy = traffic_policy(traffic_policy_name(service.name), service.namespace, service.name, parts)
    if policy is not None:
        ledger.put(TRAFFIC_KEY, policy, ready=TRAFFIC_KEY in ledger.req.observed.resources)
    ledger.remove([TRAFFIC_KEY], "no spec.limits and no fallback tier failing over per request")


def _request(rsp: fnv1.RunFunctionResponse, service: _Service, selectors: Sequence[Selector]) -> list[str]:
    """Ask for the gateway by name and the ModelEndpoints ``selectors`` may match (on every call); name the latter.

    Crossplane selects required resources by name or by labels only: matchLabels-only selectors
    become one requirement each (``endpoints-<index>``), any matchExpressions the whole namespace.
    """
    GATEWAY.request(rsp, name=service.gateway)
    by_labels = all(not s.matchExpressions for s in selectors)
    wanted = (
        {f"{ENDPOINTS}-{i}": s.matchLabels or {} for i, s in enumerate(selectors)} if by_labels else {ENDPOINTS: {}}
    )
    for name, labels in wanted.items():
        Requirement(name, API_VERSION, "ModelEndpoint").request(rsp, labels=labels, namespace=service.namespace)
    return list(wanted)


def _selector(selector: Selector) -> LabelSelector:
    requirements = [
        LabelRequirement(k, Operator.IN, frozenset({v})) for k, v in sorted((selector.matchLabels or {}).items())
    ]
    requirements += [
        LabelRequirement(e.key, Operator(e.operator), frozenset(v.root for v in e.values or []))
        for e in selector.matchExpressions or []
    ]
    return LabelSelector(tuple(requirements))


def _endpoints(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    namespace: str,
    names: Sequence[str],
    selections: Sequence[Selection],
    refused: list[str],
) -> Iterator[Endpoint]:
    """The ModelEndpoints of ``namespace`` answered under ``names`` as routing sees them (others are never routed to).

    Only those some selection matches are read whole, their labels read in place first; one whose
    labels cannot be read in place is read whole, so what does not fit is named in a warning. One
    answered under several names (matched by several entries) is read once. One carrying a
    ``modelplane.ai/`` label that modelplane did not compose is left out, why appended to ``refused``.
    """

    def matched(struct: structpb.Struct) -> bool:
        labels = labels_at(struct)
        return labels is None or any(s.selector.matches(labels) for s in selections)

    seen: set[str] = set()
    for item in (i for name in names for i in inputs.required(req, rsp, name, ENDPOINT, keep=matched)):
        meta = item.get("metadata") or {}
        if meta.get("namespace", namespace) != namespace or meta.get("name", "") in seen:
            continue
        seen.add(str(meta.get("name", "")))
        labels = meta.get("labels") or {}
        why = refusal(namespace, str(meta.get("name", "")), labels, meta.get("ownerReferences") or [])
        if why is not None:
            # Not matched at all: its Backend is not referenced and it counts in no entry.
            if any(s.selector.matches(labels) for s in selections):
                refused.append(why)
            continue
        spec, status = item.get("spec") or {}, item.get("status") or {}
        # An endpoint whose replica stopped serving is kept by its deployment, annotated: no traffic.
        serving = (meta.get("annotations") or {}).get(SERVING_ANNOTATION) != "false"
        ready = serving and readiness_of(item).true
        url: EndpointURL | None
        try:
            url = parse_url(str(spec.get("url", "")))
        except InvalidURLError:
            ready, hostname, url = False, None, None
        else:
            hostname = url.host if url.kind is HostKind.DNS else None
        # An endpoint's spec.host (a replica's virtual host on its cluster's gateway) wins over the URL's.
        hostname = str(spec.get("host") or "") or hostname
        # Its credentials count once its filter is published: the Secret exists with its key.
        credentials = status.get("credentialsFilterName") or None
        given = spec.get("credentials") or {}
        secret_ref = given.get("secretRef") or {}
        yield Endpoint(
            name=str(meta.get("name", "")),
            labels=labels,
            ready=ready,
            backend=status.get("backendName"),
            rewrite_path=str(spec.get("rewritePath") or "/"),
            hostname=hostname,
            # A pool endpoint weighs its cluster's Ready replicas; any other endpoint 1.
            weight=int(spec["weight"]) if isinstance(spec.get("weight"), int | float) else 1,
            url=url,
            credentials=credentials,
            private_ca=bool(spec.get("tls")),
            credentials_secret=str(secret_ref.get("name") or "") or None if credentials else None,
            credentials_header=str(given.get("header") or "Authorization"),
        )


def _invalid(problems: list[Problem]) -> Condition:
    message = f"the ModelService is invalid: {describe(problems)}"
    return Condition(Type.ROUTED, Status.FALSE, Reason.INVALID_SPEC, message)


def _write_status(
    rsp: fnv1.RunFunctionResponse, service: _Service, plan: RoutePlan, gateway: dict[str, Any], path: str
) -> None:
    status: dict[str, Any] = {
        "routeName": service.name,
        "matchedEndpoints": sum(1 for b in plan.backends if b.endpoint.routable),
        "endpoints": [
            {"index": g.index, "weight": g.weight, "matched": len(g.matched), "endpoints": list(g.matched)}
            for g in plan.groups
        ],
    }
    base = (gateway.get("status") or {}).get("address")
    if base:
        status["address"] = f"{str(base).rstrip('/')}{path}"
    resource.update(rsp.desired.composite, {"status": status})


def _routed(plan: RoutePlan, gateway: GatewayRef, path: str, service: str, refused: Sequence[str]) -> Condition:
    condition = _routed_plan(plan, gateway, path, service)
    if not refused:
        return condition
    return Condition(condition.type, condition.status, condition.reason, f"{condition.message}; {'; '.join(refused)}")


def _routed_plan(plan: RoutePlan, gateway: GatewayRef, path: str, service: str) -> Condition:
    if not plan.serving:
        matched = sum(len(g.matched) for g in plan.groups)
        message = (
            f"no Ready ModelEndpoint with a weight above 0 matches spec.endpoints ({matched} matched, none Ready "
            "with a Backend and a positive weight); the route is kept and answers 503 (its HTTPRouteFilter "
            f"{unavailable_filter_name(service)}) until one is"
        )
        return Condition(Type.ROUTED, Status.FALSE, Reason.NO_ENDPOINTS, message)
    if len(plan.rewrite_paths) > 1 and not SUPPORTS_BACKEND_PATH_REWRITE.get(CONTROLLER_NAME, True):
        by_path = "; ".join(
            f"{p}: {', '.join(b.endpoint.name for b in plan.backends if b.endpoint.rewrite_path == p)}"
            for p in plan.rewrite_paths
        )
        message = (
            f"the endpoints have different rewritePaths ({by_path}), routed with per-backendRef URLRewrite filters, "
            "which Envoy Gateway does not support (it rewrites the path per route, not per backend): give the "
            "selected endpoints one rewritePath, or split them into separate ModelServices"
        )
        return Condition(Type.ROUTED, Status.FALSE, Reason.UNSUPPORTED_REWRITE, message)
    active = plan.active_tier
    weights = _shares(b for b in plan.backends if b.tier == active and not b.fallback)
    empty = [f"spec.endpoints[{g.index}]" for g in plan.groups if not g.routable]
    note = f"; {', '.join(empty)} match(es) no Ready endpoint" if empty else ""
    message = f"{path} on Gateway {gateway.namespace}/{gateway.name} routes to {weights}{note}{_tiers(plan)}"
    return Condition(Type.ROUTED, Status.TRUE, Reason.ROUTED, message)


def _shares(backends: Iterable[BackendRef]) -> str:
    return ", ".join(f"{b.endpoint.name} {float(b.share.fraction):.1%}" for b in backends if b.endpoint.routable)


def _tiers(plan: RoutePlan) -> str:
    """What the tiers do: which tier serves, and how traffic reaches the one above it."""
    active = plan.active_tier
    if len(plan.tiers) < 2 or active is None:
        return ""
    out = f"; tier {active} serves (no tier below it has a Ready endpoint)" if active > 0 else ""
    if plan.fails_over:
        return f"{out}; falls back per request to tier {active + 1}: {_shares(b for b in plan.backends if b.fallback)}"
    standby = [b.endpoint.name for b in plan.backends if b.tier == active + 1 and b.endpoint.routable]
    if standby:
        out += (
            f"; tier {active + 1} ({', '.join(standby)}) gets the traffic once no tier-{active} endpoint is Ready: "
            "the route's per-backend filters keep Envoy Gateway from failing over per request"
        )
    return out
