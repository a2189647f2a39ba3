"""A pool taken out of an InferenceCluster's spec.nodePools while ModelReplicas run on it is kept (its cloud
node pool as observed), listed in status.removingPools and named in PoolsRemoved; once empty it is deleted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from tests.functions.test_compose_inference_cluster import _class, _cluster, _desired, _replica, _req, _run, _status

STUCK = "no replacement can be placed (InsufficientCapacity: 1 of 2 clusters match clusterSelector)"
# A pool the cluster composed before its entry left the spec, as Crossplane observes it.
A100 = {
    "apiVersion": "container.gcp.m.upbound.io/v1beta1",
    "kind": "NodePool",
    "metadata": {"name": "c-a100", "namespace": "crossplane-system", "uid": "u-1", "resourceVersion": "7"},
    "spec": {"forProvider": {"clusterRef": {"name": "c"}, "nodeCount": 2}},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}
A100_KEPT = {k: v for k, v in A100.items() if k != "status"} | {
    "metadata": {"name": "c-a100", "namespace": "crossplane-system"}
}


def _gke(pools: list[str]) -> dict[str, Any]:
    xr = _cluster("GKE")
    xr["spec"]["nodePools"] = [{"name": p, "className": "h100", "nodeCount": 4} for p in pools]
    return xr


def _on(name: str, pool: str, *, cluster: str = "c", stuck: str = "") -> dict[str, Any]:
    replica = _replica(name, pool=pool, cluster=cluster)
    if stuck:
        replica["metadata"]["annotations"] = {"modelplane.ai/cannot-move": stuck}
    return replica


def _split(name: str, prefill: str, decode: str) -> dict[str, Any]:
    replica = _replica(name)
    spec = replica["spec"]
    role = {"poolName": "", "nodeSelector": spec.pop("nodeSelector"), "workers": spec.pop("workers")}
    spec.pop("poolName")
    spec["prefill"] = {**role, "poolName": prefill}
    spec["decode"] = {**role, "poolName": decode}
    return replica


@dataclass(frozen=True)
class Case:
    xr: dict[str, Any]
    replicas: list[dict[str, Any]]
    observed: dict[str, dict[str, Any]] = field(default_factory=lambda: {"nodepool-a100": A100})
    kept: bool = True  # nodepool-a100 is desired exactly as observed
    removing: list[dict[str, Any]] | None = None  # status.removingPools
    condition: tuple[str, str, str] = ("True", "PoolsRemoved", "every pool taken out of spec.nodePools is removed")


CASES = [
    pytest.param(
        Case(
            _gke(["h100"]),
            [_on("m-0", "a100"), _on("m-1", "h100"), _on("x-0", "a100")],
            removing=[{"name": "a100", "remaining": 2, "replicas": ["ml/m-0", "ml/x-0"]}],
            condition=(
                "False",
                "PoolInUse",
                "pool a100 is kept until its ModelReplica(s) ml/m-0, ml/x-0 move"
                " (not in spec.nodePools: their ModelDeployments move them a wave at a time)",
            ),
        ),
        id="removed-with-replicas-is-kept",
    ),
    pytest.param(Case(_gke(["h100"]), [_on("m-1", "h100")], kept=False), id="removed-when-empty-is-deleted"),
    # Another cluster's replica on a pool of the same name is not this pool's business.
    pytest.param(
        Case(_gke(["h100"]), [_on("o-0", "a100", cluster="other")], kept=False), id="another-clusters-replica"
    ),
    pytest.param(
        Case(
            _gke([]),
            [_on("m-0", "a100")],
            removing=[{"name": "a100", "remaining": 1, "replicas": ["ml/m-0"]}],
            condition=(
                "False",
                "PoolInUse",
                "pool a100 is kept until its ModelReplica(s) ml/m-0 move"
                " (not in spec.nodePools: their ModelDeployments move them a wave at a time)",
            ),
        ),
        id="list-emptied",
    ),
    pytest.param(
        Case(
            _gke(["h100"]),
            [_split("d-0", "a100", "h100")],
            removing=[{"name": "a100", "remaining": 1, "replicas": ["ml/d-0"]}],
            condition=(
                "False",
                "PoolInUse",
                "pool a100 is kept until its ModelReplica(s) ml/d-0 move"
                " (not in spec.nodePools: their ModelDeployments move them a wave at a time)",
            ),
        ),
        id="one-role-of-a-disaggregated-replica",
    ),
    pytest.param(
        Case(
            _gke(["h100"]),
            [_on("m-0", "a100", stuck=STUCK), _on("m-2", "a100")],
            removing=[{"name": "a100", "remaining": 2, "replicas": ["ml/m-0", "ml/m-2"]}],
            condition=(
                "False",
                "PoolRemovalBlocked",
                f"pool a100 is kept until its ModelReplica(s) ml/m-0, ml/m-2 move; cannot move: ml/m-0: {STUCK}",
            ),
        ),
        id="cannot-move-says-why",
    ),
    # An existing cluster's pool is not Modelplane's to delete, but its replicas leave it all the same.
    pytest.param(
        Case(
            _cluster(),
            [_on("m-0", "a100")],
            observed={},
            kept=False,
            removing=[{"name": "a100", "remaining": 1, "replicas": ["ml/m-0"]}],
            condition=(
                "False",
                "PoolInUse",
                "pool a100 is kept until its ModelReplica(s) ml/m-0 move"
                " (not in spec.nodePools: their ModelDeployments move them a wave at a time)",
            ),
        ),
        id="existing-cluster-lists-it",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_a_pool_out_of_the_spec(case: Case) -> None:
    rsp = _run(_req(case.xr, classes=[_class("h100", "GKE")], observed=case.observed, replicas=case.replicas))
    desired = _desired(rsp)
    assert (desired.get("nodepool-a100") == A100_KEPT) is case.kept
    if not case.kept:
        assert "nodepool-a100" not in desired
    assert _status(rsp).get("removingPools") == case.removing
    got = next(c for c in rsp.conditions if c.type == "PoolsRemoved")
    assert (fnv1.Status.Name(got.status).removeprefix("STATUS_CONDITION_").title(), got.reason, got.message) == (
        case.condition
    )
    # The spec's own pools are composed as ever, and a pool leaving does not cordon the cluster.
    spec = case.xr["spec"]
    if spec["cluster"]["source"] != "Existing":
        assert {"nodepool-system", *(f"nodepool-{p['name']}" for p in spec["nodePools"])} <= set(desired)
    assert _status(rsp)["cordoned"] is False


def test_a_pool_added_back_while_kept_is_composed_from_the_spec_again() -> None:
    xr = _gke(["h100", "a100"])
    rsp = _run(
        _req(xr, classes=[_class("h100", "GKE")], observed={"nodepool-a100": A100}, replicas=[_on("m-0", "a100")])
    )
    pool = _desired(rsp)["nodepool-a100"]
    assert pool["spec"]["forProvider"]["nodeCount"] == 4
    assert pool["spec"]["forProvider"]["nodeConfig"]["labels"]["modelplane.ai/pool"] == "a100"
    assert "removingPools" not in _status(rsp)
    assert next(c.reason for c in rsp.conditions if c.type == "PoolsRemoved") == "PoolsRemoved"


def _labels(rsp: fnv1.RunFunctionResponse) -> dict[str, str]:
    return dict(rsp.requirements.resources["replicas"].match_labels.labels)


@pytest.mark.parametrize(
    ("xr", "observed", "status", "labels"),
    [
        pytest.param(_gke(["h100"]), {}, None, {"modelplane.ai/cluster": "c"}, id="nothing-leaving-asks-its-label"),
        pytest.param(
            _gke(["h100"]),
            {"nodepool-system": A100, "nodepool-h100": A100},
            None,
            {"modelplane.ai/cluster": "c"},
            id="its-own-pools-ask-its-label",
        ),
        # A replica composed before the cluster label must not have its pool deleted under it.
        pytest.param(_gke(["h100"]), {"nodepool-a100": A100}, None, {}, id="a-composed-pool-out-of-spec-asks-all"),
        pytest.param(_cluster(), {}, [{"name": "a100", "remaining": 1}], {}, id="a-kept-pool-asks-all"),
    ],
)
def test_while_a_pool_may_be_leaving_every_replica_is_read(
    xr: dict[str, Any], observed: dict[str, dict[str, Any]], status: list[dict[str, Any]] | None, labels: dict[str, str]
) -> None:
    if status is not None:
        xr["status"] = {"removingPools": status}
    assert _labels(_run(_req(xr, fetched=False, observed=observed))) == labels


@pytest.mark.parametrize(
    ("status", "want"),
    [
        # The first call after the pool left the spec: its class is what the last capacity status said.
        pytest.param(
            {"capacity": {"pools": [{"name": "a100", "className": "a100-sxm"}]}}, "a100-sxm", id="from-capacity"
        ),
        # Later calls carry it in removingPools.
        pytest.param(
            {"removingPools": [{"name": "a100", "className": "a100-sxm", "remaining": 1}]}, "a100-sxm", id="carried"
        ),
        pytest.param({}, None, id="never-published"),
    ],
)
def test_a_kept_pool_carries_the_class_it_last_published(status: dict[str, Any], want: str | None) -> None:
    xr = _gke(["h100"])
    xr["status"] = status
    rsp = _run(
        _req(xr, classes=[_class("h100", "GKE")], observed={"nodepool-a100": A100}, replicas=[_on("m-0", "a100")])
    )
    (kept,) = _status(rsp)["removingPools"]
    assert kept.get("className") == want
