"""lib/schedulers: each scheduler's wrapping, and a fourth one plugging in without touching the others."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from modelplane import schedulers
from modelplane.backends import DeviceClaim, ReplicaWork, RoleWork, compose_remote
from modelplane.schedulers import (
    SCHEDULERS,
    Gang,
    SchedulerSettingsError,
    UnknownSchedulerError,
    WorkloadScheduler,
    Wrapping,
)
from modelplane.topology import Role, footprint

GANG = Gang("llm-0", "ml", Role.UNIFIED, pods=4, labels={"modelplane.ai/replica": "llm-0"})


@pytest.mark.parametrize(
    ("kind", "settings", "want"),
    [
        pytest.param("None", {}, Wrapping(), id="none"),
        pytest.param(
            "Kueue",
            {"kueue": {"localQueueName": "serving"}},
            Wrapping(
                pod_labels={"kueue.x-k8s.io/queue-name": "serving"},
                workload_labels={"kueue.x-k8s.io/queue-name": "serving"},
            ),
            id="kueue",
        ),
        pytest.param(
            "KAI",
            {"kai": {"queue": "inference"}},
            Wrapping(
                scheduler_name="kai-scheduler",
                pod_labels={"kai.scheduler/queue": "inference"},
                pod_annotations={"pod-group-name": "llm-0"},
                workload_labels={"kai.scheduler/queue": "inference"},
                objects=(
                    {
                        "apiVersion": "scheduling.run.ai/v2alpha2",
                        "kind": "PodGroup",
                        "metadata": {
                            "name": "llm-0",
                            "namespace": "ml",
                            "labels": {"modelplane.ai/replica": "llm-0", "kai.scheduler/queue": "inference"},
                        },
                        "spec": {"minMember": 4, "queue": "inference", "markUnschedulable": True},
                    },
                ),
            ),
            id="kai-gang-of-every-pod",
        ),
    ],
)
def test_wrapping(kind: str, settings: Mapping[str, Any], want: Wrapping) -> None:
    assert schedulers.scheduler_for(kind).wrap(GANG, settings) == want


@pytest.mark.parametrize("kind", ["KAI", "Kueue"])
def test_missing_settings_name_the_field(kind: str) -> None:
    with pytest.raises(SchedulerSettingsError, match=r"spec\.scheduler\."):
        schedulers.scheduler_for(kind).wrap(GANG, {})


def test_unknown_scheduler() -> None:
    with pytest.raises(UnknownSchedulerError, match="Volcano"):
        schedulers.scheduler_for("Volcano")


def _work(scheduler: str, settings: Mapping[str, Any]) -> ReplicaWork:
    template = {"spec": {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.11.0"}]}}
    role = RoleWork(
        Role.UNIFIED,
        "gpu",
        footprint(tensor=8, pipeline=2),
        {"tensor": 8, "pipeline": 2, "data": 1, "dataLocal": 1},
        template,
        (DeviceClaim("gpu", "gpu.nvidia.com", 8, "true"),),
    )
    return ReplicaWork("llm-0", "ml", {}, (role,), scheduler, settings)


def _volcano(gang: Gang, settings: Mapping[str, Any]) -> Wrapping:
    queue = settings["volcano"]["queue"]
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": gang.name, "namespace": gang.namespace},
        "spec": {"minMember": gang.pods, "queue": queue},
    }
    return Wrapping(
        scheduler_name="volcano",
        pod_annotations={"scheduling.k8s.io/group-name": gang.name},
        objects=(group,),
    )


def test_a_fourth_scheduler_is_one_table_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    before = {
        k: compose_remote(_work(k, {"kai": {"queue": "q"}, "kueue": {"localQueueName": "q"}}), "Native")
        for k in ("None", "KAI", "Kueue")
    }
    monkeypatch.setitem(SCHEDULERS, "Volcano", WorkloadScheduler(_volcano))
    remotes = {r.key: r.manifest for r in compose_remote(_work("Volcano", {"volcano": {"queue": "q"}}), "Native")}
    assert remotes["podgroup-unified"]["spec"] == {"minMember": 2, "queue": "q"}
    pod = remotes["workload-unified"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "llm-0"}
    after = {
        k: compose_remote(_work(k, {"kai": {"queue": "q"}, "kueue": {"localQueueName": "q"}}), "Native")
        for k in ("None", "KAI", "Kueue")
    }
    assert after == before
