"""Serving replicas that give way for physical capacity, over RunFunction.

compose-model-deployment annotates its replicas ``modelplane.ai/preemption: LowerPriority`` when every
FleetQuota of its namespace says so; compose-inference-cluster gives such serving replicas of a lower
priority to a replica of a higher priority that does not fit (``status.capacity.preempted``) and
publishes what a higher priority may have (``pools[].preemptibleServing``); the victim's deployment
moves them surge-first, and the newcomer's says it waits for them.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.functions.test_compose_inference_cluster import _class, _cluster, _req, _status
from tests.functions.test_compose_inference_cluster import _replica as _cluster_replica
from tests.functions.test_compose_inference_cluster import _run as _run_cluster
from tests.functions.test_compose_model_deployment_hold import World, _cluster_named, _desired, _replica, _run
from tests.functions.test_compose_model_deployment_quota import World as QuotaWorld
from tests.functions.test_compose_model_deployment_quota import _priority_class, _quota, _replicas, _scheduled
from tests.functions.test_compose_model_deployment_quota import _run as _run_quota
from tests.functions.test_compose_model_deployment_quota import _xr as _quota_xr
from tests.functions.test_compose_model_deployment_rollout import _condition

PREEMPTION = "modelplane.ai/preemption"


def _with(replica: dict[str, Any], *, priority: int | None = None, yields: bool = False) -> dict[str, Any]:
    annotations = replica["metadata"].setdefault("annotations", {})
    if priority is not None:
        annotations |= {"modelplane.ai/priority": str(priority), "modelplane.ai/priority-class": f"p{priority}"}
    if yields:
        annotations[PREEMPTION] = "LowerPriority"
    return replica


# --- compose-model-deployment: the consent it writes on its replicas ---


def _lower_priority(quota: dict[str, Any], preemption: str) -> dict[str, Any]:
    return {**quota, "spec": {**quota["spec"], "preemption": preemption}}


@pytest.mark.parametrize(
    ("quotas", "annotated"),
    [
        pytest.param((), False, id="no-quota-no-consent"),
        pytest.param((_quota(64),), False, id="quota-never-by-default"),
        pytest.param((_lower_priority(_quota(64), "LowerPriority"),), True, id="quota-lower-priority"),
        pytest.param(
            (_lower_priority(_quota(64), "LowerPriority"), {**_quota(64), "metadata": {"name": "team-a-2"}}),
            False,
            id="one-quota-never-keeps-it",
        ),
    ],
)
def test_a_deployment_annotates_its_replicas_with_its_namespace_s_consent(
    quotas: tuple[dict[str, Any], ...], annotated: bool
) -> None:
    got = _run_quota(_quota_xr(priority="batch"), QuotaWorld(quotas=quotas, classes=(_priority_class("batch", 10),)))
    assert _scheduled(got)[0] == "TRUE"
    said = {r["metadata"].get("annotations", {}).get(PREEMPTION) for r in _replicas(got).values()}
    assert said == ({"LowerPriority"} if annotated else {None})


# --- compose-inference-cluster: who gives way, and what a higher priority may have ---


def test_a_cluster_gives_a_consenting_serving_replica_to_a_higher_priority_and_publishes_it() -> None:
    replicas = [
        _with(_cluster_replica(f"batch-{i}", tensor=8, ready=True, created="2026-01-01T00:00:00Z"), priority=10)
        for i in range(3)
    ]
    replicas.append(
        _with(
            _cluster_replica("batch-3", tensor=8, ready=True, created="2026-01-02T00:00:00Z"), priority=10, yields=True
        )
    )
    replicas.append(_with(_cluster_replica("prod-0", tensor=8, created="2026-01-03T00:00:00Z"), priority=100))
    rsp = _run_cluster(_req(_cluster(), classes=[_class("h100")], replicas=replicas))
    capacity = _status(rsp)["capacity"]
    assert capacity["preempted"] == [{"replica": "ml/batch-3", "by": "ml/prod-0"}]
    assert "overcommitted" not in capacity
    pool = capacity["pools"][0]
    assert pool["replicas"] == ["ml/batch-0", "ml/batch-1", "ml/batch-2", "ml/prod-0"]
    assert pool["free"] == 0


def test_a_cluster_publishes_what_a_higher_priority_may_have_of_consenting_serving_replicas() -> None:
    replicas = [
        _with(_cluster_replica("batch-0", tensor=8, ready=True), priority=10, yields=True),
        _with(_cluster_replica("keep-0", tensor=8, ready=True), priority=10),
    ]
    pool = _status(_run_cluster(_req(_cluster(), classes=[_class("h100")], replicas=replicas)))["capacity"]["pools"][0]
    assert pool["nodesByFree"] == {"8": 2, "0": 2}
    assert pool["preemptibleServing"] == [{"priority": 10, "nodesByFree": {"8": 3, "0": 1}}]
    assert "preemptible" not in pool


# --- compose-model-deployment: the victim moves surge-first; the newcomer waits ---


def _east_gives(world: World, victim: str, by: str) -> None:
    _cluster_named(world, "east")["status"]["capacity"] = {
        "pools": [{"name": "gpu", "devicesPerNode": 8, "nodesByFree": {"0": 1}, "replicas": [by]}],
        "preempted": [{"replica": victim, "by": by}],
    }


def test_the_victim_s_deployment_moves_it_surge_first_and_says_why() -> None:
    world = World()
    world.observed["replica-0"] = _with(_replica(0, "east"), priority=10, yields=True)
    _east_gives(world, "ml/llm-0", "team-b/prod-0")
    got = _run(world)
    desired = _desired(got)
    assert desired["replica-0"]["spec"]["inferenceClusterRef"] == {"name": "east"}  # serves until replaced
    assert desired["replica-2"]["spec"]["inferenceClusterRef"] == {"name": "south"}
    states = {p["replica"]: p["state"] for p in got["desired"]["composite"]["resource"]["status"]["placements"]}
    assert states == {"llm-0": "Leaving", "llm-1": "Current", "llm-2": "Surge"}
    scheduled = _condition(got, "Scheduled")
    assert (scheduled["status"], scheduled["message"]) == ("STATUS_CONDITION_TRUE", "placed 2 of 2 (1 leaving: llm-0)")
    said = [r["message"] for r in got.get("results", [])]
    assert (
        "moving elsewhere a wave at a time: llm-0 (team-b/prod-0, of a higher priority, takes its place on"
        " InferenceCluster east (its FleetQuota allows preemption LowerPriority))"
    ) in said


def test_the_newcomer_waits_for_the_replicas_it_takes_the_place_of() -> None:
    world = World()
    world.observed["replica-0"] = _replica(0, "east", ready=False)
    _east_gives(world, "team-b/batch-3", "ml/llm-0")
    got = _run(world)
    assert _desired(got)["replica-0"]["spec"]["inferenceClusterRef"] == {"name": "east"}
    assert _condition(got, "Scheduled")["status"] == "STATUS_CONDITION_TRUE"
    said = [r["message"] for r in got.get("results", [])]
    assert (
        "llm-0 waits on InferenceCluster east for serving replicas of a lower priority to give way: team-b/batch-3"
    ) in said
    progressing = _condition(got, "Progressing")
    assert (
        "llm-0 is waiting on InferenceCluster east for serving replicas of a lower priority to give way:"
        in (progressing["message"])
    )


@pytest.mark.parametrize(
    "preempted",
    [
        pytest.param("ml/llm-0", id="not-a-list"),
        pytest.param([{"replica": 3, "by": ["x"]}], id="wrong-types"),
        pytest.param([{"replica": "ml/llm-0"}], id="no-by"),
        pytest.param([None, 7], id="not-objects"),
    ],
)
def test_a_malformed_preempted_list_never_raises_nor_drops_what_serves(preempted: Any) -> None:
    world = World()
    world.observed["replica-0"] = _with(_replica(0, "east"), priority=10, yields=True)
    _cluster_named(world, "east")["status"]["capacity"] = {"preempted": preempted}
    got = _run(world)
    desired = _desired(got)
    assert desired["replica-0"]["spec"]["inferenceClusterRef"] == {"name": "east"}
    assert desired["replica-1"]["spec"]["inferenceClusterRef"] == {"name": "west"}
