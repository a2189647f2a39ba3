"""A pool taken out of a cluster's spec.nodePools and kept while replicas run on it (status.removingPools):
its replicas leave it surge-first, as from a draining cluster, and no new replica is placed there."""

from __future__ import annotations

import pytest

from modelplane.capacity import cluster_info
from modelplane.scheduling import HoldReason, RejectReason, Schedule, State
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica
from tests.unit.fleet import Pool, Shape, cluster, deployment, gpu_class, plan, replicas_of

H100 = gpu_class("h100", per_node=8)
DEP = deployment("llama", replicas=2, shape=Shape(tensor=8))


def _run(clusters: list[InferenceCluster], replicas: list[ModelReplica] | None = None) -> Schedule:
    return plan(DEP, clusters, [H100], replicas or [])


def _first() -> list[ModelReplica]:
    """llama-0 on a/old, llama-1 on b/gpu."""
    placed = _run([cluster("a", Pool("old", "h100", 1)), cluster("b", Pool("gpu", "h100", 1))])
    assert {p.replica: (p.cluster, p.roles[0].pool) for p in placed.placements} == {
        "llama-0": ("a", "old"),
        "llama-1": ("b", "gpu"),
    }
    return replicas_of(placed, DEP)


@pytest.mark.parametrize(
    ("pools", "removing", "want"),
    [
        pytest.param(["gpu"], ["old"], {"old"}, id="out-of-the-spec"),
        # A pool added back serves again, whatever the status from before says.
        pytest.param(["gpu", "old"], ["old"], set(), id="added-back"),
        pytest.param(["gpu"], [], set(), id="none"),
    ],
)
def test_the_cluster_reads_its_removing_pools(pools: list[str], removing: list[str], want: set[str]) -> None:
    info = cluster_info(cluster("a", *(Pool(p, "h100", 1) for p in pools), removing=removing))
    assert info is not None
    assert info.removing == want
    assert info.schedulable  # only the pool drains, not the cluster


@pytest.mark.parametrize(
    ("fleet", "held", "state", "elsewhere"),
    [
        # Kept by its cluster's function: the replica leaves, its replacement surged onto a pool in the spec.
        pytest.param(
            [cluster("a", Pool("new", "h100", 1), removing=["old"]), cluster("b", Pool("gpu", "h100", 1))],
            HoldReason.POOL_REMOVING,
            State.LEAVING,
            {("a", "new")},
            id="removing-leaves-surge-first",
        ),
        pytest.param(
            [
                cluster("a", removing=["old"]),
                cluster("b", Pool("gpu", "h100", 1)),
                cluster("c", Pool("gpu", "h100", 1)),
            ],
            HoldReason.POOL_REMOVING,
            State.LEAVING,
            {("c", "gpu")},
            id="list-emptied",
        ),
        # Not published as removing (the cluster's function has not run since): kept as it is, as ever.
        pytest.param(
            [cluster("a", Pool("new", "h100", 1)), cluster("b", Pool("gpu", "h100", 1))],
            HoldReason.POOL_NOT_FOUND,
            State.HELD,
            set(),
            id="not-published-yet-is-held",
        ),
    ],
)
def test_a_replica_on_a_removing_pool_leaves_it_and_no_replica_is_placed_there(
    fleet: list[InferenceCluster], held: HoldReason, state: State, elsewhere: set[tuple[str, str]]
) -> None:
    got = _run(fleet, _first())
    by_name = {p.replica: p for p in got.placements}
    leaving = by_name["llama-0"]
    assert leaving.held is not None
    assert (leaving.held.reason, leaving.state) == (held, state)
    assert (leaving.cluster, leaving.roles[0].pool) == ("a", "old")
    others = {(p.cluster, p.roles[0].pool) for p in got.placements if p.replica not in ("llama-0", "llama-1")}
    assert others == elsewhere
    assert got.removed == ()


def test_once_the_replacement_is_ready_the_leaving_replica_is_retired() -> None:
    fleet = [cluster("a", Pool("new", "h100", 1), removing=["old"]), cluster("b", Pool("gpu", "h100", 1))]
    surge = _run(fleet, _first())
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    serving = [
        ModelReplica.model_validate({**r.model_dump(exclude_none=True, by_alias=True), "status": ready})
        for r in replicas_of(surge, DEP)
    ]
    got = _run(fleet, serving)
    assert got.retired == ("llama-0",)
    assert all(p.roles[0].pool != "old" for p in got.placements)


def test_a_new_deployment_is_never_placed_on_a_removing_pool() -> None:
    got = plan(deployment("fresh", replicas=1, shape=Shape(tensor=8)), [cluster("a", removing=["old"])], [H100], [])
    assert got.placements == ()
    assert [u.reason for u in got.unplaced] == [RejectReason.NO_MATCHING_POOLS]
