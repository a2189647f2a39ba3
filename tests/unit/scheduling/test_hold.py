"""What runs is held: a missing input or a change that cannot run never drops or rewrites a replica."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from modelplane.capacity import DeploymentKey, Occupancy, RoleOccupancy, replica_occupancy
from modelplane.scheduling import (
    Existing,
    HoldReason,
    Origin,
    RejectReason,
    Schedule,
    serving_shape,
    shape_revision,
)
from modelplane.scheduling.rejection import LISTED
from modelplane.topology import Footprint, Role
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica
from tests.unit.fleet import Pool, Shape, cluster, deployment, gpu_class, plan, replicas_of

H100 = gpu_class("h100", per_node=8, ib=8)
H200 = gpu_class("h200", per_node=8, memory="141Gi")
CLASSES = [H100, H200]
TP8 = Shape(tensor=8)


def revision(dep: ModelDeployment) -> str:
    assert dep.spec is not None
    return shape_revision(serving_shape(dep.spec.model_dump(exclude_none=True, by_alias=True)))


def observed(replicas: Iterable[ModelReplica], *, ready: Iterable[str] = ()) -> dict[int, Occupancy]:
    """The deployment's composed replicas as it observes them, by ordinal, with the revision each runs."""
    out = {}
    for r in replicas:
        assert r.metadata is not None and r.metadata.name is not None and r.spec is not None
        occupancy = replica_occupancy(r)
        assert occupancy is not None
        shape = shape_revision(serving_shape(r.spec.model_dump(exclude_none=True, by_alias=True)))
        ordinal = int(r.metadata.name.rsplit("-", 1)[1])
        out[ordinal] = Occupancy(
            occupancy.namespace,
            occupancy.name,
            occupancy.deployment,
            occupancy.cluster,
            occupancy.roles,
            ready=r.metadata.name in set(ready),
            revision=shape,
        )
    return out


def run(
    dep: ModelDeployment,
    clusters: list[InferenceCluster],
    own: dict[int, Occupancy] | None = None,
    *,
    classes: list[InferenceClass] | None = None,
    unreadable: dict[str, str] | None = None,
    deleting: frozenset[str] = frozenset(),
) -> Schedule:
    existing = Existing(replicas=own or {}, revision=revision(dep))
    return plan(
        dep,
        clusters,
        CLASSES if classes is None else classes,
        existing=existing,
        unreadable=unreadable,
        deleting=deleting,
    )


def placed(result: Schedule) -> dict[str, tuple[str, ...]]:
    return {p.replica: (p.cluster, *(r.pool for r in p.roles)) for p in result.placements}


def held(result: Schedule) -> dict[str, HoldReason]:
    return {p.replica: p.held.reason for p in result.placements if p.held is not None}


TWO = [cluster("a", Pool("h100", "h100", 1)), cluster("b", Pool("h100", "h100", 1))]
LLAMA2 = deployment("llama", replicas=2, shape=TP8)


def _running(dep: ModelDeployment = LLAMA2, fleet: list[InferenceCluster] = TWO) -> list[ModelReplica]:
    return replicas_of(run(dep, fleet), dep)


def test_a_replica_whose_cluster_is_being_deleted_is_replaced_first_then_retired() -> None:
    before = _running()
    fleet = [*TWO, cluster("c", Pool("h100", "h100", 1))]
    deleting = frozenset({"a"})
    # The user deletes the cluster: the replica stays as it is while a replacement is placed elsewhere.
    surge = run(LLAMA2, fleet, observed(before, ready=["llama-0", "llama-1"]), deleting=deleting)
    assert placed(surge) == {"llama-0": ("a", "h100"), "llama-1": ("b", "h100"), "llama-2": ("c", "h100")}
    assert held(surge) == {"llama-0": HoldReason.CLUSTER_DELETING}
    assert surge.placements[0].held is not None and surge.placements[0].held.leaving
    assert (surge.placed, surge.complete, surge.retired, surge.removed) == (2, True, (), ())
    # Still kept while the replacement starts.
    after = [*before, *replicas_of(surge, LLAMA2)[2:]]
    starting = run(LLAMA2, fleet, observed(after, ready=["llama-0", "llama-1"]), deleting=deleting)
    assert placed(starting) == placed(surge)
    # Retired once the replacement serves.
    done = run(LLAMA2, fleet, observed(after, ready=["llama-0", "llama-1", "llama-2"]), deleting=deleting)
    assert placed(done) == {"llama-1": ("b", "h100"), "llama-2": ("c", "h100")}
    assert done.retired == ("llama-0",)


def test_a_leaving_replica_stays_while_no_replacement_fits() -> None:
    got = run(LLAMA2, TWO, observed(_running(), ready=["llama-0", "llama-1"]), deleting=frozenset({"a"}))
    assert placed(got) == {"llama-0": ("a", "h100"), "llama-1": ("b", "h100")}
    assert (got.shortfall, [u.replica for u in got.unplaced], got.retired) == (1, ["llama-2"], ())


def test_scaling_to_zero_retires_a_leaving_replica() -> None:
    zero = deployment("llama", replicas=0, shape=TP8)
    got = run(zero, TWO, observed(_running(), ready=["llama-0"]), deleting=frozenset({"a"}))
    assert (got.placements, got.retired, got.removed) == ((), ("llama-0",), ("llama-1",))


def test_scaling_down_waits_while_a_replica_cannot_be_verified() -> None:
    three = deployment("llama", replicas=3, shape=TP8)
    fleet = [*TWO, cluster("c", Pool("h100", "h100", 1))]
    running = observed(replicas_of(run(three, fleet), three), ready=["llama-0", "llama-1", "llama-2"])
    got = run(deployment("llama", replicas=1, shape=TP8), fleet[1:], running)
    assert sorted(placed(got)) == ["llama-0", "llama-1", "llama-2"]
    assert (got.removed, got.waiting) == ((), 2)
    assert held(got) == {"llama-0": HoldReason.CLUSTER_GONE}


@pytest.mark.parametrize(
    ("fleet", "classes", "unreadable", "reason", "message"),
    [
        pytest.param(
            [TWO[1]],
            CLASSES,
            {},
            HoldReason.CLUSTER_GONE,
            "InferenceCluster a is not in the fleet (deleted, or not listed)",
            id="cluster-not-listed",
        ),
        pytest.param(
            [TWO[1]],
            CLASSES,
            {"a": "spec.nodePools: Input should be a valid list"},
            HoldReason.CLUSTER_UNREADABLE,
            "InferenceCluster a cannot be read (spec.nodePools: Input should be a valid list)",
            id="cluster-unreadable",
        ),
        pytest.param(
            [cluster("a", Pool("renamed", "h100", 1)), TWO[1]],
            CLASSES,
            {},
            HoldReason.POOL_NOT_FOUND,
            "pool h100 is not in InferenceCluster a's spec.nodePools",
            id="pool-renamed",
        ),
        pytest.param(
            TWO,
            [H200],
            {},
            HoldReason.CLASS_NOT_FOUND,
            "pool h100 of InferenceCluster a: InferenceClass h100 not found",
            id="class-gone",
        ),
    ],
)
def test_a_replica_whose_input_is_unreadable_keeps_its_placement(
    fleet: list[InferenceCluster],
    classes: list[InferenceClass],
    unreadable: dict[str, str],
    reason: HoldReason,
    message: str,
) -> None:
    got = run(LLAMA2, fleet, observed(_running(), ready=["llama-0"]), classes=classes, unreadable=unreadable)
    assert placed(got) == {"llama-0": ("a", "h100"), "llama-1": ("b", "h100")}
    llama0 = got.placements[0]
    assert llama0.held is not None and (llama0.held.reason, llama0.held.message) == (reason, message)
    assert not llama0.held.leaving
    # Nothing is replaced or retired for an input that cannot be read.
    assert (got.complete, got.retired, got.removed) == (True, (), ())


@pytest.mark.parametrize(
    ("changed", "reason", "message"),
    [
        pytest.param(
            Shape(tensor=8, cel="mem >= 140Gi"),
            HoldReason.SELECTOR_MISMATCH,
            "the new shape cannot run on pool h100: spec.nodeSelector.cel matches no DRA device of h100",
            id="node-selector",
        ),
        pytest.param(
            Shape(tensor=8, cel="boom"),
            HoldReason.CEL_ERROR,
            "the new shape cannot run on pool h100: spec.nodeSelector.cel: no such key: boom (in 'boom')",
            id="cel-error",
        ),
        pytest.param(
            Shape(tensor=16),
            HoldReason.TOPOLOGY_EXCEEDS_NODE,
            "the new shape cannot run on pool h100: spec.workers.topology: a worker needs 16 GPUs per node; h100 has 8",
            id="impossible-topology",
        ),
        pytest.param(
            Shape(tensor=8, pipeline=2),
            HoldReason.TOO_FEW_NODES,
            "the new shape cannot run on pool h100: spec.workers.topology: a worker needs 2 nodes; the pool has 1",
            id="more-nodes-than-the-pool",
        ),
        pytest.param(
            Shape(tensor=8, devices=(("nic", 'device.driver == "nic.example.com"', 1),)),
            HoldReason.DEVICES_MISSING,
            "the new shape cannot run on pool h100: spec.nodeSelector.devices[0] (nic) matches no device of h100",
            id="devices-missing",
        ),
    ],
)
def test_a_change_that_cannot_run_is_held_back(changed: Shape, reason: HoldReason, message: str) -> None:
    got = run(deployment("llama", replicas=2, shape=changed), TWO, observed(_running(), ready=["llama-0"]))
    assert placed(got) == {"llama-0": ("a", "h100"), "llama-1": ("b", "h100")}
    assert held(got) == {"llama-0": reason, "llama-1": reason}
    assert got.placements[0].held is not None and got.placements[0].held.message == message
    # Held replicas keep what they run: one 8-GPU worker.
    assert [r.footprint.gpus_per_node for p in got.placements for r in p.roles] == [8, 8]


def test_a_change_that_runs_is_taken_and_an_unchanged_shape_is_never_held() -> None:
    fleet = [cluster("a", Pool("h100", "h100", 1), Pool("h200", "h200", 1))]
    dep = deployment("llama", shape=Shape(tensor=4))
    running = observed(_running(dep, fleet))
    assert held(run(deployment("llama", shape=Shape(tensor=8)), fleet, running)) == {}
    # The class changed under a shape that did not: reported stale, never held.
    ampere = gpu_class("h100", per_node=8, arch="Ampere")
    got = run(dep, fleet, running, classes=[ampere, H200])
    assert held(got) == {}
    assert got.placements[0].stale == "pool h100: spec.nodeSelector.cel matches no DRA device of h100"


@pytest.mark.parametrize(
    ("nodes", "want"),
    [
        pytest.param(2, {}, id="room-for-both"),
        # 8 GPUs: two 4-GPU replicas run; either one at 8 would overcommit the node beside the other.
        pytest.param(
            1,
            {"llama-0": HoldReason.INSUFFICIENT_CAPACITY, "llama-1": HoldReason.INSUFFICIENT_CAPACITY},
            id="room-for-neither",
        ),
    ],
)
def test_a_larger_shape_is_taken_in_place_only_where_the_pool_has_room(nodes: int, want: dict[str, str]) -> None:
    fleet = [cluster("a", Pool("h100", "h100", nodes))]
    dep = deployment("llama", replicas=2, shape=Shape(tensor=4))
    running = observed(_running(dep, fleet))
    assert placed(run(dep, fleet, running)) == {"llama-0": ("a", "h100"), "llama-1": ("a", "h100")}
    got = run(deployment("llama", replicas=2, shape=Shape(tensor=8)), fleet, running)
    assert held(got) == want
    gpus = [4, 4] if want else [8, 8]
    assert [r.footprint.gpus_per_node for p in got.placements for r in p.roles] == gpus


def test_a_replica_that_changes_shape_kind_is_placed_again_or_held_where_it_is() -> None:
    fleet = [cluster("a", Pool("h100", "h100", 1), Pool("h200", "h200", 1))]
    running = observed(_running(deployment("llama", shape=Shape(tensor=8)), fleet))
    pd = deployment("llama", prefill=Shape(tensor=4), decode=Shape(tensor=4, cel="mem >= 140Gi"))
    moved = run(pd, fleet, running)
    assert moved.placements[0].origin is Origin.MOVED
    assert moved.placements[0].pool(Role.DECODE) == "h200"
    impossible = deployment("llama", prefill=Shape(tensor=4), decode=Shape(tensor=4, cel="mem >= 500Gi"))
    kept = run(impossible, fleet, running)
    assert placed(kept) == {"llama-0": ("a", "h100")}
    assert held(kept) == {"llama-0": HoldReason.NO_MATCHING_POOLS}
    assert kept.placements[0].roles[0].role is Role.UNIFIED


def test_observed_replicas_count_when_the_fleet_list_leaves_them_out() -> None:
    running = observed(_running(), ready=["llama-0", "llama-1"])
    got = run(deployment("llama", replicas=3, shape=TP8), TWO, running)
    # Both nodes are taken by the observed replicas, though no ModelReplica was listed.
    assert placed(got) == {"llama-0": ("a", "h100"), "llama-1": ("b", "h100")}
    assert [u.reason for u in got.unplaced] == [RejectReason.INSUFFICIENT_CAPACITY]


@pytest.mark.parametrize("replicas", [pytest.param(10**6, id="a-million"), pytest.param(2**31 - 1, id="int32-max")])
def test_unplaceable_replicas_are_counted_not_listed(replicas: int) -> None:
    # Past the XRD's maximum (admission refuses it): the scheduler stays bounded by what it places regardless.
    assert LLAMA2.spec is not None
    dep = LLAMA2.model_copy(update={"spec": LLAMA2.spec.model_copy(update={"replicas": replicas})})
    got = run(dep, TWO, observed(_running()))
    assert got.placed == 2
    assert got.shortfall == replicas - 2
    assert [u.ordinal for u in got.unplaced] == list(range(2, 2 + LISTED))
    assert got.message.startswith(f"placed 2 of {replicas}: llama-2, llama-3,")
    assert f"llama-17 and {replicas - 2 - LISTED} more: InsufficientCapacity" in got.message


def test_a_replica_holding_more_workers_than_a_pool_has_is_counted_not_walked() -> None:
    # Another deployment's replica claims int32-max workers (past the XRD's maximum): its overflow is arithmetic.
    huge = Occupancy(
        "ml",
        "other-0",
        DeploymentKey("ml", "other"),
        "a",
        (RoleOccupancy(Role.UNIFIED, "h100", Footprint(nodes_per_worker=1, gpus_per_node=8, workers=2**31 - 1)),),
        ready=True,  # Ready: its cluster counts it, whatever it claims (one not Ready would be moved)
    )
    got = plan(deployment("llama", shape=TP8), TWO[:1], CLASSES, [huge])
    assert [u.reason for u in got.unplaced] == [RejectReason.INSUFFICIENT_CAPACITY]


def test_a_replica_that_cannot_be_read_counts_and_keeps_its_ordinal() -> None:
    running = observed(_running(), ready=["llama-0", "llama-1"])
    del running[0]  # llama-0 exists but does not read: the caller keeps it as it is
    existing = Existing(replicas=running, revision=revision(LLAMA2), opaque=frozenset({0}))
    fleet = [*TWO, cluster("c", Pool("h100", "h100", 1))]
    got = plan(LLAMA2, fleet, CLASSES, existing=existing)
    assert placed(got) == {"llama-1": ("b", "h100")}
    assert got.complete
    up = plan(deployment("llama", replicas=3, shape=TP8), fleet, CLASSES, existing=existing)
    assert sorted(placed(up)) == ["llama-1", "llama-2"]
