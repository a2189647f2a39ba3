"""A ModelService's ``spec.limits``: the plan, the route a token limit needs, the policy part and the condition.

A service with token limits is routed through Envoy AI Gateway (an AIGatewayRoute and its
AIServiceBackends, ``modelplane.routing.aigateway``) in place of its HTTPRoute. Limits the gateway
cannot count (tokens without its AI gateway or Redis, too many rules) compose nothing new: the
rate limits composed before stay in the BackendTrafficPolicy, the route stays the kind it was,
and ``Limited`` names each field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.status import set_conditions
from modelplane.layout import CONDITION, Layout
from modelplane.names import (
    AI_ROUTE_KEY,
    ROUTE_KEY,
    TRAFFIC_KEY,
    ai_backend_key,
    ai_backend_name,
    ai_credentials_key,
    is_ai_backend_key,
    is_ai_credentials_key,
)
from modelplane.readiness import readiness_of
from modelplane.routing import BackendRef, GatewayRef, RoutePlan
from modelplane.routing.aigateway import (
    SERVICE_HEADER,
    ai_gateway_route,
    ai_service_backend,
    backend_ref,
    backend_security_policy,
    injects_in,
    service_id,
)
from modelplane.routing.limits import Counting, Limit, LimitsPlan, plan_limits
from modelplane.routing.tiers import priority_of
from modelplane_models.model_service import Spec

# What the service reads of its InferenceGateway's spec: whether it counts in Redis and runs Envoy AI Gateway.
GATEWAY_SPEC: Layout = {"aiGateway": str, "rateLimit": {"redis": {"address": str}}}
AI_ROUTE: Layout = {"status": {"conditions": [CONDITION]}}


def plan_of(spec: Spec | None, gateway: Mapping[str, Any]) -> LimitsPlan:
    """Read ``spec.limits`` against what ``gateway`` (conformed to ``GATEWAY_SPEC`` under spec) can count."""
    entries = (spec.limits if spec else None) or []
    limits = [Limit(tuple(c.root for c in e.clients or []), e.requestsPerMinute, e.tokensPerMinute) for e in entries]
    gateway_spec = gateway.get("spec") or {}
    redis = ((gateway_spec.get("rateLimit") or {}).get("redis") or {}).get("address")
    counting = Counting(redis=bool(redis), ai_gateway=gateway_spec.get("aiGateway") == "Enabled")
    return plan_limits(limits, counting)


def ai_gateway_enabled(gateway: Mapping[str, Any]) -> bool:
    """Whether ``gateway`` (conformed to ``GATEWAY_SPEC`` under spec) runs Envoy AI Gateway."""
    return (gateway.get("spec") or {}).get("aiGateway") == "Enabled"


def through_ai_gateway(req: fnv1.RunFunctionRequest, limited: LimitsPlan, *, many_tiers: bool = False) -> bool:
    """Whether the service routes through Envoy AI Gateway.

    It does when its tokens are limited, or when it has more priority tiers than Envoy Gateway's
    Backend fallback gives (the caller checked the gateway runs the AI gateway). While limits are
    refused, a service keeps the kind of route it had: an AIGatewayRoute is only kept, never first
    composed, so nothing routed is dropped for a route that cannot be written.
    """
    if limited.problems:
        return AI_ROUTE_KEY in req.observed.resources
    return limited.tokens or many_tiers


def put_ai_route(
    ledger: Ledger, name: str, namespace: str, gateway: GatewayRef, plan: RoutePlan, limited: LimitsPlan
) -> tuple[bool, list[str]]:
    """Write the AIGatewayRoute, its AIServiceBackends and their credentials (or keep them, while limits are refused).

    The HTTPRoute composed before is removed: Envoy AI Gateway generates one with the same name.
    An endpoint with ``spec.credentials`` gets them through a BackendSecurityPolicy on its
    AIServiceBackend (the AIGatewayRoute has no backendRef filters); one whose header the AI gateway
    cannot inject in gets no traffic, and a warning says why.

    Returns:
        Whether the AIGatewayRoute is accepted, and the warnings to give.
    """
    observed = ledger.req.observed.resources
    warnings: list[str] = []
    if limited.problems:
        ours = [k for k in observed if k == AI_ROUTE_KEY or is_ai_backend_key(k) or is_ai_credentials_key(k)]
        ledger.keep(ours, "; ".join(limited.problems))
    else:
        refs = []
        for b in plan.backends:
            if not b.endpoint.backend:
                continue
            backend_name = ai_backend_name(name, b.endpoint.name)
            backend = ai_service_backend(backend_name, namespace, b.endpoint.backend, b.endpoint.rewrite_path)
            ledger.put(ai_backend_key(b.endpoint.name), backend, ready=True)
            weight, priority = _tiered(plan, b)
            problem = _put_credentials(ledger, namespace, backend_name, b)
            if problem:
                warnings.append(problem)
                weight = 0
            refs.append(backend_ref(backend_name, weight, priority))
        route = ai_gateway_route(name, namespace, gateway, refs, limited.llm_request_costs)
        ledger.put(AI_ROUTE_KEY, route, ready=_accepted(observed.get(AI_ROUTE_KEY)))
        ledger.remove_unwritten(is_ai_backend_key, lambda key: f"{key}: the service no longer routes to its endpoint")
        ledger.remove_unwritten(is_ai_credentials_key, lambda key: f"{key}: the endpoint sends no credentials")
    ledger.remove([ROUTE_KEY], "the service is routed through Envoy AI Gateway, which generates its HTTPRoute")
    return _accepted(observed.get(AI_ROUTE_KEY)), warnings


def _put_credentials(ledger: Ledger, namespace: str, backend_name: str, ref: BackendRef) -> str | None:
    """Write the BackendSecurityPolicy for ``ref``'s credentials, if it has any; the problem, if they cannot be sent."""
    endpoint = ref.endpoint
    if not endpoint.credentials or not endpoint.credentials_secret:
        return None
    if not injects_in(endpoint.credentials_header):
        return (
            f"ModelEndpoint {endpoint.name}: spec.credentials.header {endpoint.credentials_header!r}: Envoy AI "
            "Gateway injects an API key only in Authorization or x-api-key, so the endpoint gets no traffic "
            "through it"
        )
    policy = backend_security_policy(
        backend_name, namespace, backend_name, endpoint.credentials_secret, endpoint.credentials_header
    )
    ledger.put(ai_credentials_key(endpoint.name), policy, ready=True)
    return None


def _tiered(plan: RoutePlan, ref: BackendRef) -> tuple[int, int | None]:
    """The weight and priority of ``ref`` on the AIGatewayRoute.

    One tier: its planned weight, no priority. Several: Envoy fails over through the priorities
    per request, so every tier from the active one up carries its weights within the tier, and
    its rank is its priority; a tier below the active one has no Ready endpoint and weight 0.
    """
    if len(plan.tiers) < 2:
        return ref.share.weight, None
    active = plan.active_tier
    weight = ref.tier_weight if active is not None and ref.tier >= active else ref.share.weight
    return weight, priority_of(ref.tier, plan.tiers)


def remove_ai_route(ledger: Ledger) -> None:
    """Leave out the AIGatewayRoute and AIServiceBackends composed before: the service has an HTTPRoute again."""
    why = "no token limits and at most two tiers: the service is routed by its HTTPRoute"
    ledger.remove([AI_ROUTE_KEY], why)
    ledger.remove_unwritten(is_ai_backend_key, lambda _key: why)
    ledger.remove_unwritten(is_ai_credentials_key, lambda _key: why)


def where(path: str, namespace: str, name: str, *, ai: bool) -> str:
    """How callers select the service on the gateway: its path, or through the AI gateway the header naming it."""
    return f"/v1 with header {SERVICE_HEADER}: {service_id(namespace, name)}" if ai else path


def rate_limit_part(req: fnv1.RunFunctionRequest, limited: LimitsPlan) -> dict[str, Any] | None:
    """The BackendTrafficPolicy's ``rateLimit``: the plan's, or while limits are refused, the one composed before."""
    if not limited.problems:
        return limited.rate_limit
    observed = req.observed.resources.get(TRAFFIC_KEY)
    if observed is None or "spec" not in observed.resource.fields:
        return None
    spec = resource.struct_to_dict(observed.resource.fields["spec"].struct_value)
    part = spec.get("rateLimit")
    return part if isinstance(part, dict) else None


def report(rsp: fnv1.RunFunctionResponse, limited: LimitsPlan, namespace: str, name: str, *, ai: bool) -> None:
    """Set ``Limited`` when limits are set (with a warning when they are refused)."""
    limit = condition(limited, namespace, name, ai=ai)
    if limit is None:
        return
    set_conditions(rsp, limit)
    if limit.status != Status.TRUE:
        response.warning(rsp, limit.message)


def condition(limited: LimitsPlan, namespace: str, name: str, *, ai: bool) -> Condition | None:
    """``Limited``: what is enforced, or each field the gateway cannot serve; None when no limits are set."""
    if limited.problems:
        message = "; ".join(limited.problems) + ": no new limits composed, the ones composed before stay"
        return Condition(Type.LIMITED, Status.FALSE, Reason.LIMITS_REFUSED, message)
    if limited.rate_limit is None:
        return None
    kind = "global (counted in Redis)" if "global" in limited.rate_limit else "local (counted per Envoy replica)"
    message = f"spec.limits enforced as {kind} rate limits"
    if ai:
        message += (
            f"; tokens are counted by Envoy AI Gateway: callers reach the service at the gateway's /v1 paths "
            f"with header {SERVICE_HEADER}: {service_id(namespace, name)}"
        )
    return Condition(Type.LIMITED, Status.TRUE, Reason.LIMITED, message)


def _accepted(observed: fnv1.Resource | None) -> bool:
    if observed is None:
        return False
    return readiness_of(resource.struct_to_dict(observed.resource), "Accepted").true
