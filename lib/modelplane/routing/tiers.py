"""Priority tiers of a ModelService: which tiers are valid, and what failing over to a fallback tier needs.

``spec.endpoints[].tier`` orders the entries: 0 is the primary, higher tiers are fallbacks. On
Envoy Gateway a route has two priority levels (``Backend.spec.fallback``), so a service has at
most ``FALLBACK_LEVELS`` tiers; more need Envoy AI Gateway's backendRef ``priority``
(``priority_of`` gives each tier's). Envoy fails over between the levels only while a rule's
backends share one cluster, i.e. while no backendRef carries a filter: see docs/routing.md, "Tiers".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.routing.backend import backend
from modelplane.routing.urls import EndpointURL

# Envoy Gateway's Backend fallback: a primary level and one fallback level.
FALLBACK_LEVELS = 2
AI_GATEWAY_FIELD = "spec.aiGateway"

# Passive health checks (outlier detection): after 3 5xx answers or connect failures in a row an
# upstream is ejected for 30s at first, however many there are, so a tier whose upstreams all fail
# hands its traffic to the fallback tier (Envoy enforces consecutive 5xx ejection by default, not
# gateway-error ejection). No active health check: a hosted API's health path and auth are not
# known, and probing it costs requests.
HEALTH_CHECK: dict[str, Any] = {
    "passive": {
        "consecutive5XxErrors": 3,
        "interval": "5s",
        "baseEjectionTime": "30s",
        "maxEjectionPercent": 100,
    }
}
# A request that failed to connect or got a gateway error is retried once per priority level, so the
# retry goes to the fallback tier (numAttemptsPerPriority 1). Only before a response started: a token
# stream already under way is never replayed.
RETRY: dict[str, Any] = {
    "numRetries": 2,
    "numAttemptsPerPriority": 1,
    "retryOn": {
        "triggers": ["connect-failure", "reset", "retriable-status-codes"],
        "httpStatusCodes": [502, 503, 504],
    },
    "perRetry": {"backOff": {"baseInterval": "100ms", "maxInterval": "1s"}},
}


@dataclass(frozen=True)
class TierProblem:
    """Why a service's tiers cannot be routed: the field, and whether a gateway setting would fix it.

    Attributes:
        field: The first ``spec.endpoints[i].tier`` at fault.
        message: What is wrong, starting with the field.
        needs_ai_gateway: True when the tiers are valid but more than Envoy Gateway's two.
    """

    field: str
    message: str
    needs_ai_gateway: bool = False


def tier_problem(tiers: Sequence[int], *, levels: int = FALLBACK_LEVELS) -> TierProblem | None:
    """The first problem of the entries' ``tiers`` (in ``spec.endpoints`` order), or None.

    Tiers must count up from 0 without gaps (the XRD refuses gaps too; this catches a service
    admitted before the rule existed), and be at most ``levels`` distinct ones.
    """
    present = set(tiers)
    for index, tier in enumerate(tiers):
        if tier < 0 or (tier > 0 and tier - 1 not in present):
            field = f"spec.endpoints[{index}].tier"
            message = (
                f"{field}: {tier}, but no entry has tier {tier - 1}: tiers count up from 0 without gaps "
                "(0 is the primary, 1 the first fallback)"
                if tier > 0
                else f"{field}: {tier} is below 0"
            )
            return TierProblem(field, message)
    if len(present) <= levels:
        return None
    index = next(i for i, t in enumerate(tiers) if t >= levels)
    field = f"spec.endpoints[{index}].tier"
    message = (
        f"{field}: {tiers[index]}: the service has {len(present)} tiers, and Envoy Gateway's Backend fallback "
        f"gives {levels} (a primary and one fallback); more need the InferenceGateway's {AI_GATEWAY_FIELD}: "
        "Enabled (Envoy AI Gateway's backendRef priority)"
    )
    return TierProblem(field, message, needs_ai_gateway=True)


def priority_of(tier: int, tiers: Sequence[int]) -> int:
    """The backendRef priority of ``tier`` among the service's ``tiers``: its rank (0 is the primary)."""
    return sorted(set(tiers)).index(tier)


def fallback_backend(name: str, namespace: str, url: EndpointURL) -> dict[str, Any]:
    """A Backend to ``url`` that Envoy Gateway sends to only while the route's other backends are unhealthy.

    A ModelService composes its own: the endpoint's Backend is shared by every service selecting
    it, and may be a primary for one while a fallback for another.
    """
    out = backend(name, namespace, url)
    out["spec"]["fallback"] = True
    return out


def traffic_parts(*, fallback: bool) -> dict[str, Any]:
    """The BackendTrafficPolicy parts failover needs (``healthCheck``, ``retry``); none without a fallback."""
    if not fallback:
        return {}
    return {"healthCheck": HEALTH_CHECK, "retry": RETRY}
