"""The workload stand-in's rules, without an API server (these run under `make test`, not `make e2e`).

Each rule must write the status that the real controller's readiness signal
reads (the same signals ``modelplane.remote`` and the backends judge), and
write nothing once that status is there, so the stand-in does not churn.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.backends.status import ObservedRemote, lift_status
from tests.e2e.standin import CONTROL_PLANE_RULES, LLM_INFERENCE_SERVICE, WORKLOAD_RULES, Loading, gateway_address


def _obj(api_version: str, kind: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "x", "namespace": "ns", "generation": 3},
        "spec": spec or {},
    }


def _settle(rules: dict[tuple[str, str], Any], obj: dict[str, Any], scope: str) -> dict[str, Any]:
    status = rules[(obj["apiVersion"], obj["kind"])](obj, scope)
    assert status is not None, "the rule wrote nothing on a fresh object"
    done = {**obj, "status": status}
    assert rules[(obj["apiVersion"], obj["kind"])](done, scope) is None, "the rule writes again once settled"
    return done


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(_obj("apps/v1", "Deployment", {"replicas": 3}), id="deployment"),
        pytest.param(_obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", {"replicas": 2}), id="lws"),
        pytest.param(_obj("serving.kserve.io/v1alpha2", "LLMInferenceService"), id="llminferenceservice"),
    ],
)
def test_workloads_become_ready_as_the_replica_judges_them(obj: dict[str, Any]) -> None:
    assert not lift_status(["workload"], [ObservedRemote("workload", obj, "")]).ready
    done = _settle(WORKLOAD_RULES, obj, "workload-a")
    judged = lift_status(["workload"], [ObservedRemote("workload", done, "")])
    assert judged.ready, judged


def test_a_scaled_deployment_is_answered_again() -> None:
    done = _settle(WORKLOAD_RULES, _obj("apps/v1", "Deployment", {"replicas": 1}), "workload-a")
    scaled = {**done, "spec": {"replicas": 2}}
    status = WORKLOAD_RULES[("apps/v1", "Deployment")](scaled, "workload-a")
    assert status is not None
    assert status["readyReplicas"] == 2


@pytest.mark.parametrize(
    "api_version_kind",
    [
        pytest.param(("apps/v1", "Deployment"), id="deployment"),
        pytest.param(("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"), id="lws"),
    ],
)
def test_a_changed_workload_is_answered_at_its_new_generation(api_version_kind: tuple[str, str]) -> None:
    # The Deployment controller writes status.observedGeneration on every spec change; the API server
    # drops observedGeneration from a Deployment's conditions, so only the status field says it.
    done = _settle(WORKLOAD_RULES, _obj(*api_version_kind, {"replicas": 1}), "workload-a")
    conditions = [{k: v for k, v in c.items() if k != "observedGeneration"} for c in done["status"]["conditions"]]
    stored = {**done, "status": {**done["status"], "conditions": conditions}}
    assert WORKLOAD_RULES[api_version_kind](stored, "workload-a") is None, "the rule churns once settled"
    changed = {**stored, "metadata": {**stored["metadata"], "generation": 4}}
    status = WORKLOAD_RULES[api_version_kind](changed, "workload-a")
    assert status is not None
    assert status["observedGeneration"] == 4


@pytest.mark.parametrize(
    ("rules", "scope"),
    [
        pytest.param(WORKLOAD_RULES, "workload-b", id="workload"),
        pytest.param(CONTROL_PLANE_RULES, "control-plane", id="control-plane"),
    ],
)
def test_gateways_are_programmed_with_the_scope_address(rules: dict[tuple[str, str], Any], scope: str) -> None:
    done = _settle(rules, _obj("gateway.networking.k8s.io/v1", "Gateway"), scope)
    types = {c["type"]: c["status"] for c in done["status"]["conditions"]}
    assert types == {"Accepted": "True", "Programmed": "True"}
    assert done["status"]["addresses"] == [{"type": "IPAddress", "value": gateway_address(scope)}]


def test_routes_are_accepted_by_every_parent() -> None:
    refs = [{"name": "a", "namespace": "gw"}, {"name": "b", "namespace": "gw"}]
    done = _settle(WORKLOAD_RULES, _obj("gateway.networking.k8s.io/v1", "HTTPRoute", {"parentRefs": refs}), "w")
    assert [p["parentRef"] for p in done["status"]["parents"]] == refs


def test_helm_releases_are_ready_and_synced() -> None:
    done = _settle(CONTROL_PLANE_RULES, _obj("helm.m.crossplane.io/v1beta1", "Release"), "control-plane")
    assert {c["type"] for c in done["status"]["conditions"]} == {"Ready", "Synced"}


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _service(generation: int, status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = _obj(*LLM_INFERENCE_SERVICE)
    obj["metadata"] = {**obj["metadata"], "uid": "u-1", "generation": generation}
    return {**obj, "status": status} if status is not None else obj


def _judged_ready(obj: dict[str, Any]) -> bool:
    return lift_status(["workload"], [ObservedRemote("workload", obj, "")]).ready


def _step(rule: Loading, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` after the rule's answer (unchanged when it writes nothing)."""
    status = rule(obj, "workload-a")
    return obj if status is None else {**obj, "status": status}


# Each row: the loading time, then (seconds the clock moves before the step, the generation the
# object has at the step, whether it is Ready after the stand-in's answer). The status carries over.
LOADING_CASES = [
    pytest.param(0.0, [(0, 1, True), (0, 2, True)], id="default-ready-at-once-also-after-a-change"),
    pytest.param(3.0, [(0, 1, False), (2.9, 1, False), (0.2, 1, True), (5, 1, True)], id="new-loads-then-ready"),
    pytest.param(
        3.0, [(0, 1, False), (4, 1, True), (1, 2, False), (2, 2, False), (1.5, 2, True)], id="spec-change-loads"
    ),
    pytest.param(
        3.0, [(0, 1, False), (1, 2, False), (2.5, 2, False), (0.6, 2, True)], id="change-while-loading-restarts"
    ),
]


@pytest.mark.parametrize(("seconds", "steps"), LOADING_CASES)
def test_a_service_loads_for_its_generation(seconds: float, steps: list[tuple[float, int, bool]]) -> None:
    clock = _Clock()
    rule = Loading(seconds, clock=clock)
    obj = _service(1)
    for moved, generation, ready in steps:
        clock.now += moved
        obj = _step(rule, {**obj, "metadata": {**obj["metadata"], "generation": generation}})
        assert obj["status"]["observedGeneration"] == generation, obj["status"]
        assert _judged_ready(obj) is ready, (moved, generation, obj["status"])


def test_a_loading_service_is_not_rewritten() -> None:
    clock = _Clock()
    rule = Loading(3.0, clock=clock)
    loading = _step(rule, _service(1))
    (condition,) = loading["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == ("Ready", "False", "Loading")
    clock.now += 1
    assert rule(loading, "workload-a") is None, "the stand-in rewrites a loading service (churn)"
    clock.now += 3
    done = _step(rule, loading)
    assert rule(done, "workload-a") is None, "the stand-in rewrites a Ready service (churn)"


def test_a_ready_status_of_an_older_generation_is_answered_again() -> None:
    stale = _step(Loading(), _service(1))
    changed = {**stale, "metadata": {**stale["metadata"], "generation": 2}}
    status = Loading()(changed, "workload-a")
    assert status is not None
    assert status["observedGeneration"] == 2
