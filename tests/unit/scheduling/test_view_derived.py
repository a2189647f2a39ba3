"""What a FleetView derives once and hands every schedule on it: the same as reading the clusters afresh."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from modelplane.scheduling.labels import label_selector
from modelplane.scheduling.view import _STATES, FleetView, build_view, cluster_facts
from modelplane.topology import Role
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ClusterSelector
from tests.unit.fleet import Pool, Shape, cluster, fake_matcher, gpu_class, replica, view


def _fleet() -> FleetView:
    pools = (Pool("gpus", "h100", 2),)
    return view(
        [
            cluster("a", *pools, labels={"region": "eu", "tier": "prod"}),
            cluster("b", *pools, labels={"region": "us", "tier": "prod"}),
            cluster("c", *pools, labels={"region": "eu"}),
            cluster("d", *pools, labels={}),
        ],
        [gpu_class("h100")],
        deleting={"b"},
        draining={"c", "d"},
    )


@pytest.mark.parametrize(
    ("selectors", "want"),
    [
        pytest.param([None], [["a", "b", "c", "d"]], id="unset-selects-every-cluster"),
        pytest.param([{"matchLabels": {"region": "eu"}}], [["a", "c"]], id="labels"),
        pytest.param(
            [{"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}], [["c", "d"]], id="expressions"
        ),
        pytest.param(
            [{"matchLabels": {"region": "eu"}}, {"matchLabels": {"region": "us"}}, {"matchLabels": {"region": "eu"}}],
            [["a", "c"], ["b"], ["a", "c"]],
            id="each-selector-its-own-answer-asked-again",
        ),
        pytest.param([{"matchLabels": {"region": "asia"}}], [[]], id="none-matches"),
    ],
)
def test_selected_is_the_clusters_the_selector_matches(
    selectors: list[dict[str, Any] | None], want: list[list[str]]
) -> None:
    fleet = _fleet()
    for selector, names in zip(selectors, want, strict=True):
        parsed = label_selector(ClusterSelector.model_validate(selector) if selector is not None else None)
        got = [c.name for c in fleet.selected(parsed)]
        assert got == names
        assert got == [c.name for c in fleet.clusters.values() if parsed.matches(c.labels)]


def test_derived_figures_are_those_of_the_clusters_and_pools() -> None:
    fleet = _fleet()
    for _ in range(2):  # asked again: the same answers
        assert fleet.deleting() == {"b"}
        assert fleet.draining() == {"c", "d"}
        assert [c.name for c in fleet.cluster_list()] == ["a", "b", "c", "d"]
        assert fleet.free() == {k: s.free for k, s in fleet.pools.items()}
        assert fleet.counted() == {k: s.counted for k, s in fleet.pools.items() if s.counted}


def _declared(*clusters: InferenceCluster) -> FleetView:
    """Clusters that publish no summary: each pool declared, less what its scheduler observes."""
    facts = [f for f in map(cluster_facts, clusters) if f is not None]
    return build_view(facts, [gpu_class("h100")], matcher=fake_matcher)


_GPUS, _BIG = Pool("gpus", "h100", 2), Pool("gpus", "h100", 4)
_PLACED = [
    replica("a-0", cluster="a", pools={Role.UNIFIED: "gpus"}, shapes={Role.UNIFIED: Shape(tensor=4)}),
    replica("b-0", cluster="b", pools={Role.UNIFIED: "gpus"}, shapes={Role.UNIFIED: Shape(tensor=8)}),
]


@pytest.mark.parametrize(
    "views",
    [
        pytest.param(
            [
                lambda: view([cluster("a", _GPUS), cluster("b", _GPUS)], [gpu_class("h100")]),
                lambda: view([cluster("a", _GPUS), cluster("b", _GPUS)], [gpu_class("h100")], _PLACED[:1]),
                lambda: view([cluster("a", _GPUS), cluster("b", _GPUS)], [gpu_class("h100")], _PLACED),
            ],
            id="published-as-replicas-are-placed",
        ),
        pytest.param(
            [
                lambda: _declared(cluster("a", _GPUS), cluster("b", _BIG)),
                lambda: _declared(cluster("a", _BIG), cluster("b", _GPUS)),
            ],
            id="declared-pools-of-other-sizes",
        ),
        pytest.param(
            [
                lambda: _declared(cluster("a", _GPUS, observed={"gpus": ("KAI", 3)})),
                lambda: _declared(cluster("a", _GPUS, observed={"gpus": ("KAI", 9)})),
                lambda: _declared(cluster("a", _GPUS)),
            ],
            id="observed-usage-changes",
        ),
    ],
)
def test_each_pool_state_is_the_one_built_afresh(views: list[Callable[[], FleetView]]) -> None:
    # Views built one after another share the states of pools alike: each view as if built alone.
    for build in views:
        got = build().pools
        _STATES.clear()
        assert got == build().pools
