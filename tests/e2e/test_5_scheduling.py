"""Scenarios 7-9: what kube-scheduler does with what modelplane composes, on three simulated 8-GPU nodes.

7. A multi-node worker (TP8 x PP2): its LeaderWorkerSet's two pods are bound
   to two distinct nodes of the pool, each with 8 H100s allocated that match
   the deployment's CEL selector.
8. Capacity honesty: with the pool filled through modelplane, a deployment it
   says fits gets its pods scheduled; one it says does not fit gets nothing
   composed; and the pool's free GPUs as modelplane counts them are what
   kube-scheduler left unallocated (a disagreement names both figures).
9. A node lost (deleted, as kwok's node would vanish): its pod goes, its
   replacement stays Pending, the replica turns not Ready with the scheduler's
   reason, its deployment counts it out, and the other replica is untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.names import DEPLOYMENT_LABEL
from tests.e2e.hardware import CLUSTER_LABEL, RESOURCE_API
from tests.e2e.kube import Kube, condition
from tests.e2e.placement import Placement, placements, wait_placed
from tests.e2e.plane import Plane
from tests.e2e.world import cluster_gone, conditions, eventually, replicas_of, wait_condition, xr

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent / "scheduling"
NS = "e2e-scheduling"
CLUSTER = "e2e-hgx"
WORKLOAD = "workload-a"
POOL = "hgx"
# A pod of a lost node is deleted by the pod garbage collector (it waits 40 s, looks every 20 s).
NODE_LOST_TIMEOUT = 240.0


def _models() -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((HERE / "models.yaml").read_text()) if d]
    return {d["metadata"]["name"]: d for d in docs}


@pytest.fixture(scope="module")
def hgx(plane: Plane) -> Iterator[Plane]:
    plane.connect(CLUSTER, WORKLOAD, f"{CLUSTER}-kubeconfig")
    plane.kube.kubectl(["apply", "-f", str(HERE / "platform.yaml")])
    plane.kube.apply(_models()[NS])
    wait_condition(plane.kube, "InferenceCluster", CLUSTER, None, "Ready")
    yield plane
    for name in ("over", "tp8", "pp2"):
        plane.kube.delete(kinds.API_VERSION, "ModelDeployment", name, NS)
    for name in ("over", "tp8", "pp2"):
        eventually(f"{name}'s replicas to go", lambda n=name: not replicas_of(plane.kube, n, NS))  # type: ignore[misc]
    plane.kube.delete(kinds.API_VERSION, "InferenceCluster", CLUSTER)
    plane.kube.delete(kinds.API_VERSION, "InferenceClass", "e2e-h100-8")
    cluster_gone(plane.kube, CLUSTER)


def _deploy(plane: Plane, name: str) -> None:
    plane.kube.apply(_models()[name])


def _only_replica(plane: Plane, deployment: str) -> dict[str, Any]:
    (replica,) = eventually(f"the {deployment} ModelReplica", lambda: replicas_of(plane.kube, deployment, NS))
    return replica


def _scheduler_free(workload: Kube) -> int:
    """GPUs kube-scheduler has left unallocated on the cluster's nodes (devices published minus allocated)."""
    nodes = {n["metadata"]["name"] for n in workload.list("v1", "Node", labels={CLUSTER_LABEL: CLUSTER})}
    published = {
        (s["spec"]["pool"]["name"], d["name"])
        for s in workload.list(RESOURCE_API, "ResourceSlice")
        if s["spec"]["nodeName"] in nodes
        for d in s["spec"].get("devices") or []
    }
    allocated = {
        (r["pool"], r["device"])
        for c in workload.list(RESOURCE_API, "ResourceClaim")
        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results") or []
    }
    return len(published - allocated)


def _modelplane_free(plane: Plane) -> int:
    cluster = xr(plane.kube, "InferenceCluster", CLUSTER) or {}
    return int(cluster.get("status", {}).get("capacity", {}).get("free", -1))


def test_multi_node_worker_on_two_distinct_nodes(hgx: Plane) -> None:
    plane = hgx
    _deploy(plane, "pp2")
    wait_condition(plane.kube, "ModelDeployment", "pp2", NS, "Scheduled")
    replica = _only_replica(plane, "pp2")
    name = replica["metadata"]["name"]
    wait_condition(plane.kube, "ModelReplica", name, NS, "Ready", timeout=180)
    placed = wait_placed(plane.kube, plane.workloads[WORKLOAD].kube, name, NS)
    assert len(placed) == 2, placed
    assert len({p.node for p in placed}) == 2, f"a TP8 x PP2 worker shares a node: {placed}"
    for p in placed:
        assert p.pool == POOL, p
        assert len(p.devices) == 8, f"{p.pod} got {len(p.devices)} GPUs, TP8 needs 8"
        assert {d.node for d in p.devices} == {p.node}, p


def test_capacity_honesty(hgx: Plane) -> None:
    plane = hgx
    workload = plane.workloads[WORKLOAD].kube
    _deploy(plane, "tp8")
    wait_condition(plane.kube, "ModelDeployment", "tp8", NS, "Scheduled")
    replica = _only_replica(plane, "tp8")
    wait_condition(plane.kube, "ModelReplica", replica["metadata"]["name"], NS, "Ready", timeout=180)
    (placed,) = wait_placed(plane.kube, workload, replica["metadata"]["name"], NS)
    taken = {p.node for p in _placements_of(plane, "pp2")}
    assert placed.node not in taken, f"tp8 landed on {placed.node}, a node of the PP2 worker {taken}"

    def agree() -> bool:
        return _modelplane_free(plane) == _scheduler_free(workload)

    try:
        eventually("modelplane's free GPUs to be kube-scheduler's", agree)
    except TimeoutError:
        pytest.fail(
            f"modelplane says {_modelplane_free(plane)} GPUs free on {CLUSTER}, "
            f"kube-scheduler left {_scheduler_free(workload)} unallocated"
        )
    assert _scheduler_free(workload) == 0

    _deploy(plane, "over")
    deployment = wait_condition(plane.kube, "ModelDeployment", "over", NS, "Scheduled", "False")
    assert condition(deployment, "Scheduled").get("reason") == "InsufficientCapacity", conditions(deployment)
    assert not replicas_of(plane.kube, "over", NS), "a replica was composed for a deployment that does not fit"
    pods = workload.list("v1", "Pod", NS, labels={DEPLOYMENT_LABEL: "over"})
    assert not pods, f"pods of a deployment modelplane says does not fit: {[p['metadata']['name'] for p in pods]}"


def _placements_of(plane: Plane, deployment: str) -> list[Placement]:
    replica = _only_replica(plane, deployment)
    return placements(plane.workloads[WORKLOAD].kube, NS, replica["metadata"]["name"])


def test_node_lost(hgx: Plane) -> None:
    plane = hgx
    assert plane.hardware is not None
    workload = plane.workloads[WORKLOAD].kube
    tp8 = _only_replica(plane, "tp8")["metadata"]["name"]
    pp2 = _only_replica(plane, "pp2")["metadata"]["name"]
    wait_condition(plane.kube, "ModelReplica", tp8, NS, "Ready", timeout=180)
    (before,) = placements(workload, NS, tp8)
    others = placements(workload, NS, pp2)
    plane.hardware.lose(WORKLOAD, before.node)

    def replacement_pending() -> bool:
        now = placements(workload, NS, tp8)
        return bool(now) and all(p.pod != before.pod and not p.node for p in now)

    eventually(f"{tp8}'s pod to be replaced and Pending", replacement_pending, timeout=NODE_LOST_TIMEOUT)
    wait_condition(plane.kube, "ModelReplica", tp8, NS, "Ready", "False", timeout=NODE_LOST_TIMEOUT)
    # The cause, as kube-scheduler gave it (it comes with the pods, observed a poll after the
    # workload): no node left can allocate the claim.

    def cause() -> bool:
        serving = condition(xr(plane.kube, "ModelReplica", tp8, NS), "Serving")
        return serving.get("reason") == "Unschedulable" and "cannot allocate all claims" in serving.get("message", "")

    try:
        eventually(f"{tp8} to say why it is not Ready", cause)
    except TimeoutError:
        pytest.fail(f"{tp8} does not give the scheduler's cause: {conditions(xr(plane.kube, 'ModelReplica', tp8, NS))}")
    eventually(
        "the tp8 deployment to count no ready replica",
        lambda: (xr(plane.kube, "ModelDeployment", "tp8", NS) or {}).get("status", {}).get("readyReplicas") == 0,
    )
    # Nothing else is disturbed: the PP2 worker keeps its pods, nodes and Ready.
    assert placements(workload, NS, pp2) == others
    wait_condition(plane.kube, "ModelReplica", pp2, NS, "Ready")
