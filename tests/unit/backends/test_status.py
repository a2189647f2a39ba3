"""lib/backends status lifting: the remote reason that explains a replica best."""

from __future__ import annotations

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
