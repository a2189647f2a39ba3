"""spec.placement.strategy: where new replicas go, which a scale-down removes first, and when Spread is used instead."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from modelplane.scheduling import DecidedBy, Existing
from modelplane.scheduling.costs import StrategyReason
from modelplane.scheduling.explain import explain
from modelplane.topology import Role
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica
from tests.unit.fleet import Pool, Shape, deployment, plan, priced, replica, site, view

TP4 = Shape(tensor=4)


def placed(
    replicas: int, strategy: str | None = None, *, most: int | None = None, pinned: Sequence[str] = ()
) -> ModelDeployment:
    """A TP4 deployment of ``replicas`` with ``spec.placement``."""
    body = deployment("llm", replicas=replicas, shape=TP4).model_dump(exclude_none=True, by_alias=True)
    placement: dict[str, Any] = {}
    if strategy is not None:
        placement["strategy"] = strategy
    if most is not None:
        placement["maxReplicasPerCluster"] = most
    if pinned:
        placement["pinnedClusters"] = list(pinned)
    if placement:
        body["spec"]["placement"] = placement
    return ModelDeployment.model_validate(body)


H100 = priced("h100", "4.10", watts=700)
A100 = priced("a100", "2.40", watts=400)
FREE = priced("free")  # no cost


@dataclass(frozen=True)
class Case:
    deployment: ModelDeployment
    clusters: list[InferenceCluster]
    classes: list[InferenceClass]
    want: list[tuple[str, DecidedBy]]  # per replica in ordinal order: cluster, what decided it
    why: str = ""  # the first replica's message, when it says a figure
    reason: StrategyReason | None = None  # the PlacementStrategy condition's reason; None for Spread


PLACEMENTS = [
    pytest.param(
        Case(
            placed(3, "CostOptimized"),
            [site("a", Pool("gpu", "h100", 2)), site("b", Pool("gpu", "a100", 2))],
            [H100, A100],
            [("b", DecidedBy.COST), ("b", DecidedBy.COST), ("b", DecidedBy.COST)],
            why="cost: 9.60 USD/h here vs 16.40 USD/h on a (runner-up)",
            reason=StrategyReason.COST_OPTIMIZED,
        ),
        id="cost-the-cheapest-class-takes-every-replica-it-fits",
    ),
    pytest.param(
        Case(
            placed(2, "CostOptimized"),
            [site("a", Pool("gpu", "h100", 1)), site("b", Pool("gpu", "h100", 1), multiplier="0.5")],
            [H100],
            [("b", DecidedBy.COST), ("b", DecidedBy.COST)],
            why="cost: 8.20 USD/h here vs 16.40 USD/h on a (runner-up)",
            reason=StrategyReason.COST_OPTIMIZED,
        ),
        id="cost-the-cluster-multiplier-discounts",
    ),
    pytest.param(
        Case(
            placed(3, "CostOptimized", most=1),
            [site("a", Pool("gpu", "h100", 2)), site("b", Pool("gpu", "a100", 2)), site("c", Pool("gpu", "h100", 2))],
            [H100, A100],
            [("b", DecidedBy.COST), ("a", DecidedBy.TIE_BREAK), ("c", DecidedBy.ONLY_CANDIDATE)],
            why="cost: 9.60 USD/h here vs 16.40 USD/h on a (runner-up)",
            reason=StrategyReason.COST_OPTIMIZED,
        ),
        id="cost-max-replicas-per-cluster-moves-on-to-the-next-cheapest",
    ),
    pytest.param(
        Case(
            placed(2, "CostOptimized"),
            [site("a", Pool("gpu", "h100", 1)), site("b", Pool("gpu", "h100", 1))],
            [H100],
            [("a", DecidedBy.TIE_BREAK), ("b", DecidedBy.SPREAD)],
            reason=StrategyReason.COST_OPTIMIZED,
        ),
        id="cost-equal-prices-spread-as-before",
    ),
    pytest.param(
        Case(
            placed(2, "CostOptimized"),
            [site("a", Pool("gpu", "free", 1)), site("b", Pool("gpu", "h100", 1))],
            [FREE, H100],
            [("b", DecidedBy.COST), ("b", DecidedBy.COST)],
            why="cost: 16.40 USD/h here vs unpriced on a (runner-up)",
            reason=StrategyReason.COST_OPTIMIZED,
        ),
        id="cost-an-unpriced-pool-comes-after-every-priced-one",
    ),
    pytest.param(
        Case(
            placed(1, "CostOptimized"),
            [site("a", Pool("big", "h100", 1), Pool("cheap", "a100", 2))],
            [H100, A100],
            [("a", DecidedBy.ONLY_CANDIDATE)],
            reason=StrategyReason.COST_OPTIMIZED,
        ),
        id="cost-within-a-cluster-the-cheaper-pool",
    ),
    pytest.param(
        Case(
            placed(2, "CarbonAware"),
            [site("a", Pool("gpu", "h100", 1), grams=400), site("b", Pool("gpu", "h100", 1), grams=30)],
            [H100],
            [("b", DecidedBy.CARBON), ("b", DecidedBy.CARBON)],
            why="carbon: 84 gCO2/h here vs 1120 gCO2/h on a (runner-up)",
            reason=StrategyReason.CARBON_AWARE,
        ),
        id="carbon-the-cleanest-grid-first",
    ),
    pytest.param(
        Case(
            placed(2),
            [site("a", Pool("gpu", "h100", 1)), site("b", Pool("gpu", "a100", 1))],
            [H100, A100],
            [("a", DecidedBy.TIE_BREAK), ("b", DecidedBy.SPREAD)],
        ),
        id="spread-ignores-prices",
    ),
    pytest.param(
        Case(
            placed(2, "CostOptimized"),
            [site("a", Pool("gpu", "free", 1)), site("b", Pool("gpu", "free", 1))],
            [FREE],
            [("a", DecidedBy.TIE_BREAK), ("b", DecidedBy.SPREAD)],
            reason=StrategyReason.NO_COST_DATA,
        ),
        id="fallback-no-cost-data-spreads",
    ),
    pytest.param(
        Case(
            placed(2, "CostOptimized"),
            [site("a", Pool("gpu", "h100", 1)), site("b", Pool("gpu", "eur", 1))],
            [H100, priced("eur", "1.00", currency="EUR")],
            [("a", DecidedBy.TIE_BREAK), ("b", DecidedBy.SPREAD)],
            reason=StrategyReason.MIXED_CURRENCIES,
        ),
        id="fallback-mixed-currencies-spreads",
    ),
    pytest.param(
        Case(
            placed(2, "CarbonAware"),
            [site("a", Pool("gpu", "h100", 1)), site("b", Pool("gpu", "a100", 1))],
            [H100, A100],
            [("a", DecidedBy.TIE_BREAK), ("b", DecidedBy.SPREAD)],
            reason=StrategyReason.NO_CARBON_DATA,
        ),
        id="fallback-no-carbon-data-spreads",
    ),
]


@pytest.mark.parametrize("case", PLACEMENTS)
def test_where_new_replicas_go(case: Case) -> None:
    got = plan(case.deployment, case.clusters, case.classes)
    assert [(p.cluster, p.decision.decided_by if p.decision else None) for p in got.placements] == case.want
    if case.why:
        first = got.placements[0].decision
        assert first is not None
        assert first.message == case.why
    assert (got.note.reason if got.note is not None else None) == case.reason
    assert got.note is None or got.note.applied == (
        case.reason in (StrategyReason.COST_OPTIMIZED, StrategyReason.CARBON_AWARE)
    )


@pytest.mark.parametrize("case", PLACEMENTS)
def test_explain_says_what_the_scheduler_decided(case: Case) -> None:
    got = plan(case.deployment, case.clusters, case.classes)
    explained = explain(case.deployment, view(case.clusters, case.classes))
    assert [(s.chosen, s.decided_by) for s in explained.steps] == [
        (p.cluster, str(p.decision.decided_by) if p.decision else "") for p in got.placements
    ]
    assert bool(explained.unit) == (got.note is not None and got.note.applied)


@pytest.mark.parametrize(
    ("strategy", "field", "fallback"),
    [
        pytest.param("CostOptimized", "spec.cost", "placed by Spread", id="no-cost"),
        pytest.param("CarbonAware", "spec.carbon.gramsCO2PerKWh", "placed by Spread", id="no-carbon"),
    ],
)
def test_a_fallback_names_the_field_and_spread(strategy: str, field: str, fallback: str) -> None:
    got = plan(placed(1, strategy), [site("a", Pool("gpu", "free", 1))], [FREE])
    assert got.note is not None
    assert field in got.note.message
    assert fallback in got.note.message


def test_mixed_currencies_name_each_currency_and_class() -> None:
    classes = [H100, priced("eur", "1.00", currency="EUR")]
    got = plan(
        placed(1, "CostOptimized"), [site("a", Pool("gpu", "h100", 1)), site("b", Pool("gpu", "eur", 1))], classes
    )
    assert got.note is not None
    assert "spec.cost.currency" in got.note.message
    assert "EUR (eur)" in got.note.message
    assert "USD (h100)" in got.note.message


def test_only_the_selected_clusters_are_candidates() -> None:
    """A cluster the selector leaves out does not make the fleet's currencies mixed."""
    dep = placed(1, "CostOptimized").model_dump(exclude_none=True, by_alias=True)
    dep["spec"]["clusterSelector"] = {"matchLabels": {"tier": "prod"}}
    classes = [H100, priced("eur", "1.00", currency="EUR")]
    clusters = [site("a", Pool("gpu", "h100", 1), labels={"tier": "prod"}), site("b", Pool("gpu", "eur", 1))]
    got = plan(ModelDeployment.model_validate(dep), clusters, classes)
    assert got.note is not None
    assert got.note.reason is StrategyReason.COST_OPTIMIZED


def _running(name: str, where: str, *, ready: bool = True) -> ModelReplica:
    return replica(
        name, cluster=where, pools={Role.UNIFIED: "gpu"}, shapes={Role.UNIFIED: TP4}, deployment="llm", ready=ready
    )


@dataclass(frozen=True)
class Down:
    deployment: ModelDeployment
    running: list[ModelReplica]
    removed: list[str]
    clusters: list[InferenceCluster] = field(
        default_factory=lambda: [
            site("cheap", Pool("gpu", "a100", 2), grams=400),
            site("dear", Pool("gpu", "h100", 2), grams=30),
            site("mid", Pool("gpu", "h100", 2), multiplier="0.8", grams=100),
        ]
    )


_THREE = [_running("llm-0", "cheap"), _running("llm-1", "dear"), _running("llm-2", "mid")]

SCALE_DOWNS = [
    pytest.param(Down(placed(1), _THREE, ["llm-2", "llm-1"]), id="spread-highest-ordinals-first"),
    pytest.param(Down(placed(1, "CostOptimized"), _THREE, ["llm-1", "llm-2"]), id="cost-costliest-first"),
    pytest.param(Down(placed(2, "CarbonAware"), _THREE, ["llm-0"]), id="carbon-dirtiest-first"),
    pytest.param(
        Down(
            placed(1, "CostOptimized"),
            [_running("llm-0", "cheap"), _running("llm-1", "dear"), _running("llm-2", "mid", ready=False)],
            ["llm-2", "llm-1"],
        ),
        id="cost-not-ready-before-costly",
    ),
    pytest.param(
        Down(placed(1, "CostOptimized", pinned=["dear"]), _THREE, ["llm-2", "llm-0"]),
        id="cost-pinned-last-ready-stays",
    ),
    pytest.param(
        Down(
            placed(1, "CostOptimized", pinned=["dear"]),
            [_running("llm-0", "cheap"), _running("llm-1", "dear"), _running("llm-2", "dear")],
            ["llm-2", "llm-0"],
        ),
        id="cost-pinned-keeps-one-not-all",
    ),
    pytest.param(
        Down(placed(0, "CostOptimized", pinned=["dear", "mid"]), _THREE, ["llm-0", "llm-1", "llm-2"]),
        id="pinned-goes-when-spec-replicas-asks-fewer",
    ),
    pytest.param(
        Down(placed(2, "CostOptimized", pinned=["dear", "mid"]), _THREE, ["llm-0"]),
        id="pinned-clusters-both-keep-theirs",
    ),
]


@pytest.mark.parametrize("case", SCALE_DOWNS)
def test_which_replicas_a_scale_down_removes(case: Down) -> None:
    got = plan(case.deployment, case.clusters, [H100, A100], case.running, existing=Existing())
    assert list(got.removed) == case.removed
    want = case.deployment.spec.replicas if case.deployment.spec else None
    assert len(got.placements) == want  # never below spec.replicas


@pytest.mark.parametrize(
    ("classes", "clusters", "cost", "carbon"),
    [
        pytest.param(
            [H100, A100],
            [site("a", Pool("gpu", "h100", 1), grams=100), site("b", Pool("gpu", "a100", 1), multiplier="0.5")],
            {"cost": {"perHour": "21.20", "currency": "USD"}},
            {"carbon": {"gramsCO2PerHour": "280", "unpricedReplicas": 1}},
            id="summed-over-clusters",
        ),
        pytest.param(
            [FREE, A100],
            [site("a", Pool("gpu", "free", 1)), site("b", Pool("gpu", "a100", 1))],
            {"cost": {"perHour": "9.60", "currency": "USD", "unpricedReplicas": 1}},
            {},
            id="an-unpriced-replica-is-counted-apart",
        ),
        pytest.param(
            [H100, priced("eur", "1.00", currency="EUR")],
            [site("a", Pool("gpu", "h100", 1)), site("b", Pool("gpu", "eur", 1))],
            {},
            {},
            id="mixed-currencies-no-sum",
        ),
        pytest.param([FREE], [site("a", Pool("gpu", "free", 2))], {}, {}, id="no-prices-nothing"),
    ],
)
def test_status_cost(
    classes: list[InferenceClass],
    clusters: list[InferenceCluster],
    cost: dict[str, Any],
    carbon: dict[str, Any],
) -> None:
    got = plan(placed(2), clusters, classes)
    assert len(got.placements) == 2
    assert got.spend.status() == {**cost, **carbon}


def test_spend_is_exact() -> None:
    got = plan(placed(3, "CostOptimized"), [site("a", Pool("gpu", "x", 2))], [priced("x", "0.1")])
    assert got.spend.per_hour == Decimal("1.2")
