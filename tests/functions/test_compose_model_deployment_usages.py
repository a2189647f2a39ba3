"""compose-model-deployment keeps what each replica runs on and serves through with Crossplane Usages.

From the steady state of ``test_compose_model_deployment_hold`` (llm-0 on east, llm-1 on west, south free),
with east a cloud cluster publishing its objects (``status.cloudResourceRefs``), west an Existing one, and
both publishing their ServingStack's anchor (``status.stackResourceRefs``): each replica gets one Usage per
object it depends on (its cluster's objects of no pool, the stack's anchor, the system pool, its own
pools'); a replica that leaves keeps its Usages until it is deleted, and they go in the same call as the
replica, never before.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import xrds

from tests.functions.test_compose_model_deployment_hold import World, _cluster_named, _desired, _replica, _run, _xr
from tests.functions.test_compose_model_deployment_rollout import T0, _call, _observe, _stamp

GKE, EKS = "container.gcp.m.upbound.io/v1beta1", "eks.aws.m.upbound.io/v1beta1"
NS = "crossplane-system"


def _ref(api: str, kind: str, name: str, pool: str = "") -> dict[str, str]:
    out = {"apiVersion": api, "kind": kind, "name": name, "namespace": NS}
    return {**out, "pool": pool} if pool else out


GKE_EAST = [
    _ref(GKE, "Cluster", "east"),
    _ref(GKE, "NodePool", "east-gpu", "gpu"),
    _ref(GKE, "NodePool", "east-other", "other"),
    _ref(GKE, "NodePool", "east-system", "system"),
]
EKS_EAST = [
    _ref(EKS, "Cluster", "east"),
    _ref(EKS, "ClusterAuth", "east"),
    _ref(EKS, "NodeGroup", "east-gpu", "gpu"),
    _ref(EKS, "NodeGroup", "east-system", "system"),
]


def _anchor(cluster: str) -> dict[str, str]:
    """The ServingStack anchor ``cluster`` publishes in ``status.stackResourceRefs``."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": f"{cluster}-stack-anchor", "namespace": NS}


def _publish(world: World, cluster: str, refs: list[dict[str, str]], field: str = "cloudResourceRefs") -> None:
    _cluster_named(world, cluster).setdefault("status", {})[field] = refs


def _world(refs: list[dict[str, str]] | None = GKE_EAST, *, stacks: bool = True) -> World:
    world = World()
    if refs is not None:
        _publish(world, "east", refs)
    if stacks:
        for cluster in ("east", "west"):
            _publish(world, cluster, [_anchor(cluster)], "stackResourceRefs")
    return world


def _usages(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in _desired(got).items() if k.startswith("usage-")}


def _settled(world: World) -> World:
    """The world once the call's Usages are observed: the steady state with Usages."""
    got = _run(world)
    world.observed |= copy.deepcopy(_usages(got))
    return world


def test_a_usage_keeps_the_cluster_until_the_replica_is_gone() -> None:
    got = _run(_world())
    assert _usages(got)["usage-0-cluster-east"] == {
        "apiVersion": "protection.crossplane.io/v1beta1",
        "kind": "Usage",
        "metadata": {
            "name": "llm-0-cluster-east",
            "namespace": "ml",
            "labels": {"modelplane.ai/deployment": "llm", "modelplane.ai/cluster": "east"},
        },
        "spec": {
            "of": {
                "apiVersion": GKE,
                "kind": "Cluster",
                "resourceRef": {"name": "east", "namespace": "crossplane-system"},
            },
            "by": {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelReplica", "resourceRef": {"name": "llm-0"}},
            "replayDeletion": True,
        },
    }
    ready = {k: v.get("ready") for k, v in got["desired"]["resources"].items() if k.startswith("usage-")}
    assert set(ready.values()) == {"READY_TRUE"}, ready


def _disaggregated(world: World) -> None:
    spec = world.observed["replica-0"]["spec"]
    spec.pop("poolName")
    spec["prefill"] = {"poolName": "gpu"}
    spec["decode"] = {"poolName": "other"}


# Every replica keeps its cluster's ServingStack anchor; llm-1 (on west, an Existing cluster) nothing else.
STACKS = ["usage-0-configmap-east-stack-anchor", "usage-1-configmap-west-stack-anchor"]


@pytest.mark.parametrize(
    ("refs", "change", "stacks", "want"),
    [
        pytest.param(
            GKE_EAST,
            None,
            True,
            ["usage-0-cluster-east", "usage-0-nodepool-east-gpu", "usage-0-nodepool-east-system", *STACKS],
            id="gke-cluster-its-pool-the-system-pool-and-the-stack",
        ),
        pytest.param(
            EKS_EAST,
            None,
            True,
            [
                "usage-0-cluster-east",
                "usage-0-clusterauth-east",
                "usage-0-nodegroup-east-gpu",
                "usage-0-nodegroup-east-system",
                *STACKS,
            ],
            id="eks-with-its-access-entry",
        ),
        pytest.param(None, None, True, STACKS, id="existing-clusters-keep-their-stack"),
        pytest.param(None, None, False, [], id="nothing-published-none"),
        pytest.param([], None, False, [], id="empty-lists-none"),
        pytest.param(
            GKE_EAST,
            None,
            False,
            ["usage-0-cluster-east", "usage-0-nodepool-east-gpu", "usage-0-nodepool-east-system"],
            id="no-stack-anchor-reported-yet",
        ),
        pytest.param(
            GKE_EAST,
            _disaggregated,
            True,
            [
                "usage-0-cluster-east",
                "usage-0-nodepool-east-gpu",
                "usage-0-nodepool-east-other",
                "usage-0-nodepool-east-system",
                *STACKS,
            ],
            id="disaggregated-both-roles-pools",
        ),
    ],
)
def test_each_replica_uses_what_it_runs_on_and_serves_through(
    refs: list[dict[str, str]] | None, change: Callable[[World], None] | None, stacks: bool, want: list[str]
) -> None:
    world = _world(refs, stacks=stacks)
    if change is not None:
        change(world)
    got = _run(world)
    usages = _usages(got)
    assert sorted(usages) == sorted(want)
    for key, usage in usages.items():
        result = xrds.validate(usage)
        assert result.ok, f"{key}: {result.errors}"


def test_a_usage_keeps_the_stack_anchor_of_an_existing_cluster_until_the_replica_is_gone() -> None:
    got = _run(_world(None))
    assert _usages(got)["usage-1-configmap-west-stack-anchor"]["spec"] == {
        "of": {"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "west-stack-anchor", "namespace": NS}},
        "by": {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelReplica", "resourceRef": {"name": "llm-1"}},
        "replayDeletion": True,
    }


def _delete_east(world: World) -> None:
    _cluster_named(world, "east")["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"


def _drain_east(world: World) -> None:
    _cluster_named(world, "east")["spec"]["drain"] = True


def _remove_east_pool(world: World) -> None:
    east = _cluster_named(world, "east")
    east["spec"]["nodePools"] = []
    east["status"]["removingPools"] = [{"name": "gpu", "remaining": 1, "replicas": ["ml/llm-0"]}]


def _unpublish_east(world: World) -> None:
    del _cluster_named(world, "east")["status"]["cloudResourceRefs"]
    del _cluster_named(world, "east")["status"]["stackResourceRefs"]


def _drop_east(world: World) -> None:
    world.clusters = [c for c in world.clusters if c["metadata"]["name"] != "east"]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_delete_east, id="cluster-being-deleted"),
        pytest.param(_drain_east, id="cluster-draining"),
        pytest.param(_remove_east_pool, id="pool-removed-from-spec"),
        pytest.param(_unpublish_east, id="cluster-stops-publishing"),
        pytest.param(_drop_east, id="cluster-not-listed"),
    ],
)
def test_a_replica_that_leaves_or_cannot_be_placed_keeps_its_usages(change: Callable[[World], None]) -> None:
    world = _settled(_world())
    before = {k: v for k, v in world.observed.items() if k.startswith("usage-")}
    assert before
    change(world)
    got = _run(world)
    assert "replica-0" in _desired(got)
    assert _usages(got) == before
    assert not [r for r in got.get("results", []) if "accounted for" in r["message"]]


def test_a_call_that_keeps_everything_keeps_the_usages() -> None:
    world = _settled(_world())
    before = {k: v for k, v in world.observed.items() if k.startswith("usage-")}
    world.xr["spec"]["replicas"] = "two"
    assert _usages(_run(world)) == before


def test_usages_go_with_their_replica_when_scaled_down() -> None:
    world = _world()
    world.observed = {k: v for k, v in world.observed.items() if k.endswith("-0")}
    world.observed |= {"replica-1": _replica(1, "east")}
    world = _settled(world)
    assert {k for k in world.observed if k.startswith("usage-1-")}
    world.xr = _xr(replicas=1)
    got = _run(world)
    desired = _desired(got)
    assert "replica-1" not in desired
    assert sorted(_usages(got)) == [
        "usage-0-cluster-east",
        "usage-0-configmap-east-stack-anchor",
        "usage-0-nodepool-east-gpu",
        "usage-0-nodepool-east-system",
    ]
    assert not [r for r in got.get("results", []) if "accounted for" in r["message"]]


def test_a_deleted_cluster_keeps_its_objects_until_its_replica_is_retired_then_lets_go_with_it() -> None:
    """Call after call: llm-0's Usages stay while it runs on east, and leave in the call that retires it."""
    world = _settled(_world())
    _delete_east(world)
    now, retired = T0, False
    for _ in range(8):
        got = _call(world, now)
        desired = _desired(got)
        usages = sorted(k for k in desired if k.startswith("usage-0-"))
        if "replica-0" in desired and desired["replica-0"]["spec"]["inferenceClusterRef"] == {"name": "east"}:
            assert usages == [
                "usage-0-cluster-east",
                "usage-0-configmap-east-stack-anchor",
                "usage-0-nodepool-east-gpu",
                "usage-0-nodepool-east-system",
            ]
        else:
            retired = True
            assert usages == []
            break
        _stamp(world, got, now)
        _observe(world, got)
        now += timedelta(seconds=30)
    assert retired, "llm-0 was never retired: the test proves nothing"


@pytest.mark.parametrize(
    ("listed", "kept"),
    [
        pytest.param(True, True, id="still-listed-kept"),
        pytest.param(False, False, id="gone-retired"),
    ],
)
def test_a_usage_of_a_replica_not_composed_stays_while_the_replica_exists(listed: bool, kept: bool) -> None:
    # llm-0 is not among the observed resources and cannot be placed again (no class is listed): the call
    # neither composes nor lets it go. While the API server lists it, it may run: its Usages stay; once it
    # is not listed, a Usage of it would hold its object for ever, and goes.
    world = _settled(_world())
    replica = world.observed.pop("replica-0")
    world.replicas = [replica, world.observed["replica-1"]] if listed else [world.observed["replica-1"]]
    world.classes = []
    got = _run(world)
    assert "replica-0" not in _desired(got)
    usages = {k for k in world.observed if k.startswith("usage-0-")}
    assert usages
    assert (usages <= set(_usages(got))) == kept
    assert not (usages & set(_usages(got))) or kept
    assert not [r for r in got.get("results", []) if "accounted for" in r["message"]]
