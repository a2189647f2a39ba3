"""The rate-limit rules of spec.limits (``modelplane.routing.limits``) and the AI gateway's backendRefs, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.routing.aigateway import backend_ref
from modelplane.routing.limits import Counting, Limit, plan_limits

_ALL = Counting(redis=True, ai_gateway=True)


@pytest.mark.parametrize(
    ("limits", "counting", "kind", "rules", "tokens"),
    [
        pytest.param([], Counting(), None, 0, False, id="none-no-part"),
        pytest.param([Limit(requests_per_minute=5)], Counting(), "local", 1, False, id="shared-local"),
        pytest.param([Limit(requests_per_minute=5)], Counting(redis=True), "global", 1, False, id="shared-global"),
        pytest.param([Limit(("a", "b", "a"), 5)], Counting(), "local", 2, False, id="one-rule-per-distinct-client"),
        pytest.param([Limit(("a",), 5, 10)], _ALL, "global", 2, True, id="requests-and-tokens-two-budgets"),
        pytest.param([Limit(tuple(f"c{i}" for i in range(16)), 5)], Counting(), "local", 16, False, id="local-at-max"),
        pytest.param(
            [Limit(tuple(f"c{i}" for i in range(16)), 5, 5)] * 8, _ALL, "global", 256, True, id="global-at-max"
        ),
    ],
)
def test_rules(limits: list[Limit], counting: Counting, kind: str | None, rules: int, tokens: bool) -> None:
    plan = plan_limits(limits, counting)
    assert plan.problems == ()
    assert plan.tokens is tokens
    if kind is None:
        assert plan.rate_limit is None
        return
    assert plan.rate_limit is not None
    assert list(plan.rate_limit) == [kind]
    assert len(plan.rate_limit[kind]["rules"]) == rules
    assert bool(plan.llm_request_costs) is tokens


@pytest.mark.parametrize(
    ("limits", "counting", "fields"),
    [
        pytest.param(
            [Limit(tokens_per_minute=1)],
            Counting(redis=True),
            ["spec.limits[0].tokensPerMinute: the InferenceGateway's spec.aiGateway"],
            id="tokens-no-ai-gateway",
        ),
        pytest.param(
            [Limit(requests_per_minute=1), Limit(tokens_per_minute=1)],
            Counting(ai_gateway=True),
            ["spec.limits[1].tokensPerMinute: the InferenceGateway sets no spec.rateLimit.redis"],
            id="tokens-no-redis",
        ),
        pytest.param(
            [Limit(tokens_per_minute=1)],
            Counting(),
            ["spec.limits[0].tokensPerMinute: the InferenceGateway's", "spec.limits[0].tokensPerMinute: the Inference"],
            id="tokens-neither",
        ),
        pytest.param(
            [Limit(tuple(f"c{i}" for i in range(9)), 1, 1)],
            Counting(ai_gateway=True),
            ["spec.limits[0].tokensPerMinute", "spec.limits: 18 rules"],
            id="too-many-local-rules",
        ),
        pytest.param(
            [Limit(tuple(f"c{i}" for i in range(16)), 5)] * 17,
            Counting(redis=True),
            ["spec.limits: 272 rules (one per client id and rate) are more than the 256"],
            id="too-many-global-rules",
        ),
    ],
)
def test_refused(limits: list[Limit], counting: Counting, fields: list[str]) -> None:
    plan = plan_limits(limits, counting)
    # Refused whole: no part, so the caller keeps the one composed before.
    assert plan.rate_limit is None
    assert len(plan.problems) == len(fields)
    for problem, start in zip(plan.problems, fields, strict=True):
        assert problem.startswith(start)


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(("b", 3), {"name": "b", "weight": 3}, id="weight"),
        pytest.param(("b", 0, 1), {"name": "b", "weight": 0, "priority": 1}, id="weight-and-priority"),
    ],
)
def test_backend_ref(args: tuple[Any, ...], want: dict[str, Any]) -> None:
    assert backend_ref(*args) == want
