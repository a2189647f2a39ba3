"""compose-model-deployment and a pool taken out of its cluster's spec.nodePools, kept by the cluster while
replicas run on it (status.removingPools): the replica on it moves surge-first, Ready never below the bound."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.functions.test_compose_model_deployment_hold import World, _cluster_named
from tests.functions.test_compose_model_deployment_rollout import T0, _call, _condition, _observe, _roll, _stamp


def _remove_east_pool(world: World, *, published: bool = True, added: list[str] | None = None) -> None:
    east = _cluster_named(world, "east")
    east["spec"]["nodePools"] = [{"name": n, "className": "h100", "nodeCount": 1} for n in added or []]
    if published:
        east.setdefault("status", {})["removingPools"] = [{"name": "gpu", "remaining": 1, "replicas": ["ml/llm-0"]}]


def _pools(step: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {p["replica"]: (p["cluster"], p.get("pool", "")) for p in step["status"]["placements"]}


@pytest.mark.parametrize(
    "added",
    [
        pytest.param([], id="list-emptied"),
        # Another pool on east: the replacement may go there, never on the pool being removed.
        pytest.param(["gpu2"], id="pool-replaced"),
    ],
)
def test_a_removing_pool_is_left_surge_first_and_nothing_new_lands_on_it(added: list[str]) -> None:
    world = World()
    _remove_east_pool(world, added=added)
    trace = _roll(world)
    assert min(len(step["ready"]) for step in trace) == 2
    assert [p["state"] for p in trace[0]["status"]["placements"]] == ["Leaving", "Current", "Surge"]
    for step in trace:
        assert [r for r, where in _pools(step).items() if where == ("east", "gpu") and r != "llm-0"] == []
    assert "llm-0" not in trace[-1]["where"]
    assert len(trace[-1]["where"]) == 2


def test_the_leaving_replica_is_reported_as_progress_and_its_retirement_says_why() -> None:
    world = World()
    _remove_east_pool(world)
    got = _call(world, T0)
    scheduled = _condition(got, "Scheduled")
    assert (scheduled["status"], scheduled["message"]) == ("STATUS_CONDITION_TRUE", "placed 2 of 2 (1 leaving: llm-0)")
    said = [r["message"] for r in got.get("results", [])]
    assert any("pool gpu is being removed from InferenceCluster east" in m for m in said), said
    said = []
    for step in range(6):
        now = T0 + timedelta(seconds=30 * step)
        got = _call(world, now)
        _stamp(world, got, now)
        _observe(world, got)
        said += [r["message"] for r in got.get("results", []) if r["message"].startswith("retired ")]
    assert said == [
        "retired llm-0: its pool is being removed from its InferenceCluster and enough replicas are Ready without it"
    ]


def test_a_pool_not_yet_published_as_removing_keeps_its_replica_held() -> None:
    world = World()
    _remove_east_pool(world, published=False)
    got = _call(world, T0)
    states = {p["replica"]: p["state"] for p in got["desired"]["composite"]["resource"]["status"]["placements"]}
    assert states == {"llm-0": "Held", "llm-1": "Current"}
    assert _condition(got, "Scheduled")["reason"] == "PoolNotFound"
