"""Scenario 5: real Kueue admits, or holds, what Modelplane composes on a Kueue cluster.

On API server workload-b the real Kueue manager runs (``tests/e2e/kueue.py``), with the
queues the platform team would create (``admission/queues.yaml``): a ClusterQueue whose
quota admits one of two deployments. The second is held by Kueue itself (its pod keeps
Kueue's admission gate, its Workload no quota): its ModelReplica says it is waiting for
admission, not that it failed. Once the quota is raised, Kueue admits the second and it turns Ready.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.names import REPLICA_LABEL
from modelplane.schedulers.kueue import ADMISSION_GATE
from tests.e2e import kueue as kueues
from tests.e2e.kube import Kube, condition
from tests.e2e.plane import Plane
from tests.e2e.world import cluster_gone, conditions, eventually, replicas_of, wait_condition, xr

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent / "admission"
NS = "e2e-admission"
CLUSTER = "e2e-queued"
WORKLOAD = "workload-b"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
# Pods from kwok's Ready (with its load delay), seen by provider-kubernetes' poll, then the XRs.
READY_TIMEOUT = 240.0


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((HERE / name).read_text()) if d]


def _models() -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in _docs("models.yaml")}


@pytest.fixture(scope="module")
def queued(plane: Plane) -> Iterator[Plane]:
    server = plane.workloads[WORKLOAD]
    kueue = kueues.start(
        plane.sup,
        plane.ca,
        server,
        binary=plane.tools.kueue,
        config_dir=plane.tools.kueue_config,
        work=plane.work / "kueue",
        namespaces=[NS],
    )
    try:
        plane.connect(CLUSTER, WORKLOAD, f"{CLUSTER}-kubeconfig")
        plane.kube.kubectl(["apply", "-f", str(HERE / "platform.yaml")])
        plane.kube.apply(_models()[NS])
        # The queues live in the replicas' namespace on the workload cluster (Modelplane's Namespace adopts it).
        server.kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        for doc in _docs("queues.yaml"):
            server.kube.apply(doc)
        wait_condition(plane.kube, "InferenceCluster", CLUSTER, None, "Ready")
        yield plane
    finally:
        for name in ("first", "second"):
            plane.kube.delete(kinds.API_VERSION, "ModelDeployment", name, NS)
        for name in ("first", "second"):
            eventually(f"{name}'s replicas to go", lambda n=name: not replicas_of(plane.kube, n, NS))  # type: ignore[misc]
        plane.kube.delete(kinds.API_VERSION, "InferenceCluster", CLUSTER)
        plane.kube.delete(kinds.API_VERSION, "InferenceClass", "e2e-l40s-4")
        cluster_gone(plane.kube, CLUSTER)
        for doc in reversed(_docs("queues.yaml")):
            meta = doc["metadata"]
            server.kube.delete(doc["apiVersion"], doc["kind"], meta["name"], meta.get("namespace"))
        kueue.stop()


def _only_replica(plane: Plane, deployment: str) -> str:
    (replica,) = eventually(f"the {deployment} ModelReplica", lambda: replicas_of(plane.kube, deployment, NS))
    return str(replica["metadata"]["name"])


def _pods(workload: Kube, replica: str) -> list[dict[str, Any]]:
    return workload.list("v1", "Pod", NS, labels={REPLICA_LABEL: replica})


def _gates(pod: dict[str, Any]) -> list[str]:
    return [str(g.get("name")) for g in pod.get("spec", {}).get("schedulingGates") or []]


def _kueue_workloads(workload: Kube, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kueue's Workload objects of ``pods`` (each owned by its pod)."""
    uids = {p["metadata"]["uid"] for p in pods}
    return [
        w
        for w in workload.list(KUEUE_API, "Workload", NS)
        if {o.get("uid") for o in w["metadata"].get("ownerReferences") or []} & uids
    ]


def test_admitted_within_quota(queued: Plane) -> None:
    plane = queued
    workload = plane.workloads[WORKLOAD].kube
    plane.kube.apply(_models()["first"])
    wait_condition(plane.kube, "ModelDeployment", "first", NS, "Scheduled")
    replica = _only_replica(plane, "first")
    wait_condition(plane.kube, "ModelReplica", replica, NS, "Ready", timeout=READY_TIMEOUT)
    pods = _pods(workload, replica)
    assert pods, f"no pods of {replica} on {WORKLOAD}"
    for pod in pods:
        assert not _gates(pod), f"{pod['metadata']['name']} is Ready but still gated: {_gates(pod)}"
        assert pod["spec"].get("nodeName"), pod["metadata"]["name"]
    admitted = _kueue_workloads(workload, pods)
    assert admitted, f"Kueue made no Workload for {replica}'s pods: Kueue did not manage them"
    for w in admitted:
        assert condition(w, "Admitted").get("status") == "True", w.get("status")


def test_over_quota_waits_for_admission_not_failed(queued: Plane) -> None:
    plane = queued
    workload = plane.workloads[WORKLOAD].kube
    plane.kube.apply(_models()["second"])
    wait_condition(plane.kube, "ModelDeployment", "second", NS, "Scheduled")
    replica = _only_replica(plane, "second")

    def waiting() -> bool:
        serving = condition(xr(plane.kube, "ModelReplica", replica, NS), "Serving")
        return serving.get("reason") == "WaitingForAdmission"

    try:
        eventually(f"{replica} to say it waits for admission", waiting, timeout=READY_TIMEOUT)
    except TimeoutError:
        found = conditions(xr(plane.kube, "ModelReplica", replica, NS))
        pytest.fail(f"{replica} does not say it waits for Kueue: {found}")
    # Nothing failed: every object reaches the cluster (the route can come a poll after the pods).
    obj = wait_condition(plane.kube, "ModelReplica", replica, NS, "Deployed")
    assert condition(obj, "Ready").get("status") == "False", conditions(obj)
    assert condition(obj, "Serving").get("reason") == "WaitingForAdmission", conditions(obj)
    assert "waiting for Kueue to admit it" in condition(obj, "Serving").get("message", ""), conditions(obj)
    # Kueue itself holds it: the pod keeps the admission gate, unplaced; its Workload has no quota.
    pods = _pods(workload, replica)
    assert pods, f"no pods of {replica} on {WORKLOAD}"
    for pod in pods:
        assert ADMISSION_GATE in _gates(pod), f"{pod['metadata']['name']}: {_gates(pod)}"
        assert not pod["spec"].get("nodeName"), f"{pod['metadata']['name']} was placed while over quota"
    held = _kueue_workloads(workload, pods)
    assert held, f"Kueue made no Workload for {replica}'s pods"
    for w in held:
        assert condition(w, "QuotaReserved").get("status") != "True", w.get("status")


def test_admitted_once_the_quota_is_raised(queued: Plane) -> None:
    plane = queued
    workload = plane.workloads[WORKLOAD].kube
    second = _only_replica(plane, "second")
    # The platform team raises the ClusterQueue's quota: Kueue itself admits the waiting workload.
    (queue,) = [d for d in _docs("queues.yaml") if d["kind"] == "ClusterQueue"]
    quota = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    quota["nominalQuota"] = "4"
    workload.apply(queue)
    wait_condition(plane.kube, "ModelReplica", second, NS, "Ready", timeout=READY_TIMEOUT)
    for pod in _pods(workload, second):
        assert not _gates(pod), pod["metadata"]["name"]
    first = _only_replica(plane, "first")
    wait_condition(plane.kube, "ModelReplica", first, NS, "Ready")
