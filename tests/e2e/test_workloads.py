"""The KServe and LeaderWorkerSet stand-ins, without an API server (under `make test`, not `make e2e`).

They must create what the real controllers would from what modelplane composes
(the pods' template, claim and pool pinning unchanged), judge readiness only
from the pods, and write nothing once the status is there (no churn).
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.backends.status import ObservedRemote, lift_status
from tests.e2e.workloads import (
    HASH_ANNOTATION,
    LWS_GROUP_LABEL,
    LWS_WORKER_LABEL,
    kserve_status,
    kserve_workloads,
    lws_pods,
    lws_status,
    nodes_per_group,
)

POD_SPEC = {
    "containers": [{"name": "main", "image": "vllm", "resources": {"claims": [{"name": "accelerators"}]}}],
    "nodeSelector": {"modelplane.ai/pool": "l4"},
    "resourceClaims": [{"name": "accelerators", "resourceClaimTemplateName": "r-unified"}],
}


def _service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceService",
        "metadata": {"name": "r", "namespace": "ns", "uid": "u", "generation": 2},
        "spec": {"replicas": 1, "labels": {"modelplane.ai/replica": "r"}, "template": POD_SPEC, **spec},
    }


def _ready_pod(name: str, labels: dict[str, str], spec_hash: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels, "annotations": {HASH_ANNOTATION: spec_hash}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


@pytest.mark.parametrize(
    ("spec", "kinds"),
    [
        pytest.param({}, [("Deployment", "r-kserve")], id="single-node"),
        pytest.param(
            {"worker": POD_SPEC, "parallelism": {"tensor": 8, "pipeline": 2}},
            [("LeaderWorkerSet", "r-kserve-mn")],
            id="multi-node",
        ),
        pytest.param(
            {"prefill": {"replicas": 2, "labels": {"modelplane.ai/replica": "r"}, "template": POD_SPEC}},
            [("Deployment", "r-kserve"), ("Deployment", "r-kserve-prefill")],
            id="disaggregated",
        ),
    ],
)
def test_kserve_creates_the_workloads_it_would(spec: dict[str, Any], kinds: list[tuple[str, str]]) -> None:
    workloads = kserve_workloads(_service(**spec))
    assert [(w["kind"], w["metadata"]["name"]) for w in workloads] == kinds
    for w in workloads:
        assert w["metadata"]["ownerReferences"][0]["uid"] == "u"
        template = (
            w["spec"]["template"] if w["kind"] == "Deployment" else w["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
        )
        assert template["spec"] == POD_SPEC, "the composed pod (claim, pool) must pass unchanged"
        assert template["metadata"]["labels"]["modelplane.ai/replica"] == "r"


def test_kserve_sizes_a_multi_node_group_from_the_parallelism() -> None:
    (lws,) = kserve_workloads(_service(worker=POD_SPEC, parallelism={"tensor": 8, "pipeline": 2}))
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2


@pytest.mark.parametrize(
    ("parallelism", "size"),
    [
        pytest.param({}, 1, id="none"),
        pytest.param({"pipeline": 2}, 2, id="pipeline"),
        pytest.param({"data": 4, "dataLocal": 2}, 2, id="data"),
        pytest.param({"pipeline": 2, "data": 2, "dataLocal": 1}, 4, id="both"),
    ],
)
def test_nodes_per_group(parallelism: dict[str, int], size: int) -> None:
    assert nodes_per_group(parallelism) == size


def _deployment_ready(want: dict[str, Any], replicas: int) -> dict[str, Any]:
    return {
        **want,
        "metadata": {**want["metadata"], "generation": 1},
        "status": {
            "observedGeneration": 1,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
        },
    }


def test_kserve_is_ready_from_its_pods_and_then_quiet() -> None:
    service = _service()
    (want,) = kserve_workloads(service)
    unschedulable = {
        "metadata": {"name": "r-kserve-abc", "labels": {}},
        "status": {
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes"}
            ]
        },
    }
    pending = kserve_status(service, [(None, want)], [unschedulable], lambda _: True)
    assert pending is not None
    (cond,) = pending["conditions"]
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert "0/2 nodes" in cond["message"]
    judged = lift_status(["workload"], [ObservedRemote("workload", {**service, "status": pending}, "")])
    assert not judged.ready

    running = kserve_status(service, [(_deployment_ready(want, 1), want)], [], lambda _: True)
    assert running is not None
    done = {**service, "status": running}
    assert lift_status(["workload"], [ObservedRemote("workload", done, "")]).ready
    assert kserve_status(done, [(_deployment_ready(want, 1), want)], [], lambda _: True) is None


def test_kserve_waits_for_the_model_to_load() -> None:
    service = _service()
    (want,) = kserve_workloads(service)
    loading = kserve_status(service, [(_deployment_ready(want, 1), want)], [], lambda _: False)
    assert loading is not None
    assert loading["conditions"][0]["reason"] == "Loading"


def test_a_deployment_of_an_older_spec_is_not_ready() -> None:
    service = _service()
    (old,) = kserve_workloads(service)
    (new,) = kserve_workloads(_service(replicas=2))
    status = kserve_status(_service(replicas=2), [(_deployment_ready(old, 1), new)], [], lambda _: True)
    assert status is not None
    assert status["conditions"][0]["status"] == "False"


def _lws(replicas: int, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u", "generation": 1},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "workerTemplate": {"metadata": {"labels": {"modelplane.ai/replica": "r"}}, "spec": POD_SPEC},
            },
        },
    }


def test_lws_creates_leader_and_workers_per_group() -> None:
    pods = lws_pods(_lws(2, 2))
    assert [p["metadata"]["name"] for p in pods] == ["w-0", "w-0-1", "w-1", "w-1-1"]
    assert [(p["metadata"]["labels"][LWS_GROUP_LABEL], p["metadata"]["labels"][LWS_WORKER_LABEL]) for p in pods] == [
        ("0", "0"),
        ("0", "1"),
        ("1", "0"),
        ("1", "1"),
    ]
    assert all(p["spec"] == POD_SPEC and p["metadata"]["labels"]["modelplane.ai/replica"] == "r" for p in pods)


def test_lws_counts_groups_whose_pods_are_all_ready() -> None:
    lws = _lws(2, 2)
    want = lws_pods(lws)
    ready = [
        _ready_pod(p["metadata"]["name"], p["metadata"]["labels"], p["metadata"]["annotations"][HASH_ANNOTATION])
        for p in want
    ]
    partial = lws_status(lws, ready[:3])
    assert partial is not None
    assert (partial["readyReplicas"], partial["conditions"][0]["status"]) == (1, "False")
    full = lws_status(lws, ready)
    assert full is not None
    assert (full["readyReplicas"], full["conditions"][0]["status"]) == (2, "True")
    done = {**lws, "status": full}
    assert lift_status(["workload"], [ObservedRemote("workload", done, "")]).ready
    assert lws_status(done, ready) is None
