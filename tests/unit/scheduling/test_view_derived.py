"""What a FleetView derives once and hands every schedule on it: the same as reading the clusters afresh."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.scheduling.labels import label_selector
from modelplane.scheduling.view import FleetView
from modelplane_models.model_deployment import ClusterSelector
from tests.unit.fleet import Pool, cluster, gpu_class, view


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
