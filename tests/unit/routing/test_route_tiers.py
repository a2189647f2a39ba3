"""plan_route with tiers: weights within a tier, the active tier, and when the tier above is Envoy's fallback."""

from __future__ import annotations

import pytest

from modelplane.routing import Endpoint, Selection, parse_url, plan_route
from modelplane.scheduling.labels import LabelSelector, Operator, Requirement


def _select(app: str, weight: int = 1, tier: int = 0) -> Selection:
    return Selection(LabelSelector((Requirement("app", Operator.IN, frozenset({app})),)), weight, tier)


def _ep(
    name: str,
    app: str,
    *,
    ready: bool = True,
    host: str | None = None,
    credentials: str | None = None,
    private_ca: bool = False,
) -> Endpoint:
    return Endpoint(
        name,
        {"app": app},
        ready,
        name,
        hostname=host,
        url=parse_url("http://10.0.0.1"),
        credentials=credentials,
        private_ca=private_ca,
    )


@pytest.mark.parametrize(
    ("selections", "endpoints", "want", "active"),
    [
        pytest.param(
            [_select("a"), _select("b", tier=1)],
            [_ep("a-0", "a"), _ep("b-0", "b")],
            {"a-0": (1, 0, False), "b-0": (1, 1, True)},
            0,
            id="fallback-per-request",
        ),
        pytest.param(
            [_select("a"), _select("b", tier=1)],
            [_ep("a-0", "a", host="a.example"), _ep("b-0", "b")],
            {"a-0": (1, 0, False), "b-0": (0, 1, False)},
            0,
            id="a-host-filter-leaves-the-fallback-to-the-control-plane",
        ),
        pytest.param(
            [_select("a"), _select("b", tier=1)],
            [_ep("a-0", "a"), _ep("b-0", "b", credentials="b-0-credentials")],
            {"a-0": (1, 0, False), "b-0": (0, 1, False)},
            0,
            id="credentials-are-a-backendref-filter",
        ),
        pytest.param(
            [_select("a"), _select("b", tier=1)],
            [_ep("a-0", "a"), _ep("b-0", "b", private_ca=True)],
            {"a-0": (1, 0, False), "b-0": (0, 1, False)},
            0,
            id="a-private-ca-fallback-is-not-copied",
        ),
        pytest.param(
            [_select("a"), _select("b", tier=1)],
            [_ep("a-0", "a", ready=False), _ep("b-0", "b")],
            {"a-0": (0, 0, False), "b-0": (1, 1, False)},
            1,
            id="no-ready-primary",
        ),
        pytest.param(
            [_select("a", 3), _select("b", 1), _select("c", 1, tier=1), _select("d", 4, tier=1)],
            [_ep("a-0", "a"), _ep("b-0", "b"), _ep("c-0", "c"), _ep("d-0", "d")],
            {"a-0": (3, 0, False), "b-0": (1, 0, False), "c-0": (1, 1, True), "d-0": (4, 1, True)},
            0,
            id="weights-within-each-tier",
        ),
        pytest.param(
            [_select("a"), _select("a", tier=1)],
            [_ep("a-0", "a")],
            {"a-0": (1, 0, False)},
            0,
            id="the-lower-tier-wins",
        ),
        pytest.param(
            [_select("a"), _select("b", tier=1)],
            [_ep("a-0", "a", ready=False), _ep("b-0", "b", ready=False)],
            {"a-0": (0, 0, False), "b-0": (0, 1, False)},
            None,
            id="nothing-ready",
        ),
    ],
)
def test_tiers(
    selections: list[Selection],
    endpoints: list[Endpoint],
    want: dict[str, tuple[int, int, bool]],
    active: int | None,
) -> None:
    plan = plan_route(selections, endpoints)
    assert {b.endpoint.name: (b.share.weight, b.tier, b.fallback) for b in plan.backends} == want
    assert plan.active_tier == active
    assert plan.fails_over == any(f for _, _, f in want.values())
