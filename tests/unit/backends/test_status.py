"""lib/backends status lifting: the remote reason that explains a replica best."""

from __future__ import annotations

import pytest

from modelplane.backends import ObservedRemote, lift_status


def _deployment(ready: int, want: int = 1) -> dict[str, object]:
    available = "True" if ready >= want else "False"
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llm-0"},
        "spec": {"replicas": want},
        "status": {"readyReplicas": ready, "conditions": [{"type": "Available", "status": available}]},
    }


def test_nothing_observed_yet_is_deploying() -> None:
    got = lift_status(["namespace", "workload-unified"], [])
    assert (got.deployed, got.deployed_reason, got.ready, got.reason) == (False, "Deploying", False, "Deploying")


def test_ready_when_every_workload_is() -> None:
    got = lift_status(
        ["namespace", "workload-unified"],
        [ObservedRemote("namespace", {"kind": "Namespace"}), ObservedRemote("workload-unified", _deployment(1))],
    )
    assert (got.deployed, got.ready, got.reason) == (True, True, "Available")


def test_a_crash_loop_outranks_a_pending_pod() -> None:
    pods = [
        {
            "metadata": {"name": "a", "labels": {"modelplane.ai/role": "unified"}},
            "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
        },
        {
            "metadata": {"name": "b", "labels": {"modelplane.ai/role": "unified"}},
            "status": {"containerStatuses": [{"name": "main", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
        },
    ]
    got = lift_status(["workload-unified"], [ObservedRemote("workload-unified", _deployment(0, 2))], pods)
    assert got.reason == "CrashLoopBackOff"
    assert "0/2 unified pods ready; pod b container main" in got.message


def _pod(name: str, *, gates: tuple[str, ...] = (), scheduled: tuple[str, str] | None = None) -> dict[str, object]:
    pod: dict[str, object] = {"metadata": {"name": name, "labels": {"modelplane.ai/role": "unified"}}}
    if gates:
        pod["spec"] = {"schedulingGates": [{"name": g} for g in gates]}
    if scheduled is not None:
        pod["status"] = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": scheduled[0]}]}
    return pod


@pytest.mark.parametrize(
    ("pods", "reason", "says"),
    [
        pytest.param(
            [_pod("a", gates=("kueue.x-k8s.io/admission",), scheduled=("SchedulingGated", ""))],
            "WaitingForAdmission",
            "pod a is waiting for Kueue to admit it (scheduling gates: kueue.x-k8s.io/admission)",
            id="kueue-gate",
        ),
        pytest.param(
            [_pod("a", gates=("example.com/hold",))],
            "WaitingForAdmission",
            "pod a is waiting for its scheduling gates to be lifted (scheduling gates: example.com/hold)",
            id="unknown-gate",
        ),
        pytest.param(
            [_pod("a", scheduled=("Unschedulable", ""))],
            "Unschedulable",
            "pod a",
            id="ungated-unschedulable-is-not-admission",
        ),
        pytest.param(
            [_pod("a", gates=("kueue.x-k8s.io/admission",)), _pod("b", scheduled=("Unschedulable", ""))],
            "Unschedulable",
            "0/2 unified pods ready; pod b",
            id="a-pod-that-cannot-be-placed-outranks-a-queued-one",
        ),
    ],
)
def test_a_gated_pod_is_waiting_for_admission_not_failing(
    pods: list[dict[str, object]], reason: str, says: str
) -> None:
    got = lift_status(["workload-unified"], [ObservedRemote("workload-unified", _deployment(0, len(pods)))], pods)
    assert (got.deployed, got.ready, got.reason) == (True, False, reason)
    assert says in got.message
