"""Tier rules: tiers count up from 0 without gaps, at most Envoy Gateway's two, and each tier's priority."""

from __future__ import annotations

import pytest

from modelplane.routing.tiers import priority_of, tier_problem, traffic_parts


@pytest.mark.parametrize(
    ("tiers", "field", "needs_ai_gateway"),
    [
        pytest.param([], None, False, id="no-entries"),
        pytest.param([0], None, False, id="one-tier"),
        pytest.param([0, 0, 1], None, False, id="primary-and-fallback"),
        pytest.param([1, 0], None, False, id="any-order"),
        pytest.param([0, 2], "spec.endpoints[1].tier", False, id="gap"),
        pytest.param([1], "spec.endpoints[0].tier", False, id="no-primary"),
        pytest.param([0, -1], "spec.endpoints[1].tier", False, id="negative"),
        pytest.param([0, 1, 2], "spec.endpoints[2].tier", True, id="three-tiers"),
        pytest.param([2, 1, 0], "spec.endpoints[0].tier", True, id="three-tiers-first-named"),
    ],
)
def test_tier_problem(tiers: list[int], field: str | None, needs_ai_gateway: bool) -> None:
    problem = tier_problem(tiers)
    if field is None:
        assert problem is None
        return
    assert problem is not None
    assert problem.field == field
    assert problem.message.startswith(field)
    assert problem.needs_ai_gateway is needs_ai_gateway


def test_more_levels_allow_more_tiers() -> None:
    assert tier_problem([0, 1, 2], levels=3) is None


@pytest.mark.parametrize(
    ("tier", "tiers", "want"),
    [
        pytest.param(0, [0, 1], 0, id="primary"),
        pytest.param(1, [1, 0, 1], 1, id="fallback"),
        pytest.param(2, [0, 1, 2], 2, id="third"),
    ],
)
def test_priority_of(tier: int, tiers: list[int], want: int) -> None:
    assert priority_of(tier, tiers) == want


def test_traffic_parts_only_with_a_fallback() -> None:
    assert traffic_parts(fallback=False) == {}
    assert sorted(traffic_parts(fallback=True)) == ["healthCheck", "retry"]
