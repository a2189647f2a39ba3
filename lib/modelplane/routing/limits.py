"""A ModelService's rate limits (``spec.limits``): the ``rateLimit`` part of its BackendTrafficPolicy.

Each limit is counted per client id it names (a rule matching ``CLIENT_ID_HEADER`` exactly, one
budget per id), or shared by every caller of the service when it names none (a rule with no client
selector). A per-client budget for every caller (Envoy Gateway's ``Distinct`` header match) is not
offered: a caller with no client id (a gateway with ``spec.auth.mode`` None) escapes such a rule, and
a local ``Distinct`` rule tracks only the last 20 values it saw, so it bounds nothing.

Requests are counted where the gateway counts: each Envoy replica on its own (``local``) unless the
InferenceGateway names a Redis (``global``). Tokens are charged after each response from the count
Envoy AI Gateway writes in the request's metadata (``TOKEN_METADATA_NAMESPACE``), which only a global
rule can read: a token limit needs the gateway's AI gateway and its Redis, and a list asking for
what the gateway cannot count is refused whole, each reason naming its field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.routing.auth import CLIENT_ID_HEADER

# Where Envoy AI Gateway writes the token counts of a response, under the route's llmRequestCosts keys.
TOKEN_METADATA_NAMESPACE = "io.envoy.ai_gateway"  # noqa: S105 - a metadata namespace, not a secret
# The one count a limit charges: prompt plus completion tokens.
TOTAL_TOKENS_KEY = "modelplane_total_tokens"
TOTAL_TOKENS_TYPE = "TotalToken"
# Envoy Gateway v1.9's BackendTrafficPolicy takes at most this many rules (spec.rateLimit.<kind>.rules).
MAX_RULES = {"local": 16, "global": 256}


@dataclass(frozen=True)
class Limit:
    """One ``spec.limits[]`` entry: its client ids (none: one budget for every caller) and rates."""

    clients: tuple[str, ...] = ()
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None


@dataclass(frozen=True)
class Counting:
    """What the service's InferenceGateway can count: in Redis (global) and with Envoy AI Gateway (tokens)."""

    redis: bool = False
    ai_gateway: bool = False


@dataclass(frozen=True)
class LimitsPlan:
    """The ``rateLimit`` part (None: no limits, or refused), whether tokens are counted, and what is refused."""

    rate_limit: dict[str, Any] | None = None
    tokens: bool = False
    problems: tuple[str, ...] = ()

    @property
    def llm_request_costs(self) -> list[dict[str, str]]:
        """What the service's AIGatewayRoute counts for its token limits (empty without any)."""
        return [{"metadataKey": TOTAL_TOKENS_KEY, "type": TOTAL_TOKENS_TYPE}] if self.tokens else []


def plan_limits(limits: Sequence[Limit], counting: Counting) -> LimitsPlan:
    """The rate-limit rules of ``limits`` on a gateway that counts as ``counting`` says.

    Args:
        limits: The service's ``spec.limits``, in order.
        counting: What the gateway offers.

    Returns:
        The plan: no part when ``limits`` is empty; with problems (each naming its field), no part either,
        so the caller keeps the part it composed before.
    """
    if not limits:
        return LimitsPlan()
    problems = []
    for index, limit in enumerate(limits):
        if limit.tokens_per_minute is None:
            continue
        field = f"spec.limits[{index}].tokensPerMinute"
        if not counting.ai_gateway:
            problems.append(
                f"{field}: the InferenceGateway's spec.aiGateway is not Enabled (Envoy AI Gateway counts the "
                "tokens of each response)"
            )
        if not counting.redis:
            problems.append(
                f"{field}: the InferenceGateway sets no spec.rateLimit.redis (tokens are charged after the "
                "response, which only a global limit, counted in Redis, can do)"
            )
    kind = "global" if counting.redis else "local"
    rules = [rule for limit in limits for rule in _rules(limit)]
    if len(rules) > MAX_RULES[kind]:
        problems.append(
            f"spec.limits: {len(rules)} rules (one per client id and rate) are more than the {MAX_RULES[kind]} "
            f"Envoy Gateway takes for {kind} limits"
        )
    if problems:
        return LimitsPlan(problems=tuple(problems))
    tokens = any(limit.tokens_per_minute is not None for limit in limits)
    return LimitsPlan({kind: {"rules": rules}}, tokens)


def _rules(limit: Limit) -> list[dict[str, Any]]:
    """One rule per client id (or one shared) and per rate: requests first, then tokens."""
    selectors: list[list[dict[str, Any]] | None] = [
        [{"headers": [{"name": CLIENT_ID_HEADER, "type": "Exact", "value": client}]}]
        for client in sorted(set(limit.clients))
    ] or [None]
    out = []
    for selector in selectors:
        match = {"clientSelectors": selector} if selector else {}
        if limit.requests_per_minute is not None:
            out.append({**match, "limit": {"requests": limit.requests_per_minute, "unit": "Minute"}})
        if limit.tokens_per_minute is not None:
            out.append(
                {
                    **match,
                    "limit": {"requests": limit.tokens_per_minute, "unit": "Minute"},
                    # Checked before the request (costing nothing), charged the response's tokens after it.
                    "cost": {
                        "request": {"from": "Number", "number": 0},
                        "response": {
                            "from": "Metadata",
                            "metadata": {"namespace": TOKEN_METADATA_NAMESPACE, "key": TOTAL_TOKENS_KEY},
                        },
                    },
                }
            )
    return out
