"""Priority and physical capacity: who keeps a full pool, and what a higher priority may take.

A cluster packs its replicas not serving yet highest priority first, so when a pool is full the
lowest-priority, newest placements are the ones found beyond it (and moved by their deployments).
A deployment whose replica fits nowhere takes the place of lower-priority replicas not serving
yet; serving replicas never give way for capacity here (only where their FleetQuotas consent:
``test_preempt_serving``), and free room elsewhere is always taken first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from modelplane.capacity import ClusterInfo, Listed, cluster_info, replica_occupancy, summarize
from modelplane.scheduling import Existing, Schedule, schedule
from modelplane.scheduling.quotas import Quotas
from modelplane.scheduling.view import build_view, summary_facts
from modelplane.topology import Role
from tests.unit.fleet import Pool, Shape, cluster, deployment, fake_matcher, gpu_class, replica

H100 = gpu_class("h100")
TP8 = Shape(tensor=8, cel="true")


def _info(name: str, nodes: int) -> ClusterInfo:
    info = cluster_info(cluster(name, Pool("gpu", "h100", nodes)))
    assert info is not None
    return info


def _replica(name: str, on: str, *, ready: bool = False, priority: int | None = None, created: str = "") -> Listed:
    body = replica(
        name,
        cluster=on,
        pools={Role.UNIFIED: "gpu"},
        shapes={Role.UNIFIED: TP8},
        deployment=name.rsplit("-", 1)[0],
        ready=ready,
        priority=("p", priority) if priority is not None else None,
    )
    occupancy = replica_occupancy(body)
    assert occupancy is not None
    return Listed(occupancy, created)


def _schedule(clusters: Sequence[ClusterInfo], listed: Sequence[Listed], *, priority: int) -> Schedule:
    """A new deployment ``llm`` of one 8-GPU replica, on the clusters as they publish ``listed``."""
    facts = [
        summary_facts(c, summarize(c, {"h100": 8}, [r for r in listed if r.occupancy.cluster == c.name]))
        for c in clusters
    ]
    view = build_view(facts, [H100], matcher=fake_matcher)
    dep = deployment("llm", replicas=1, shape=TP8)
    return schedule(dep, view, existing=Existing(), quotas=Quotas((), priority))


@dataclass(frozen=True)
class Case:
    id: str
    clusters: tuple[ClusterInfo, ...]
    fleet: tuple[Listed, ...]
    priority: int
    where: str  # the cluster the replica lands on ("" for none)
    preempts: bool = False


CASES = [
    Case(
        "lower-not-serving-gives-way",
        (_info("east", 1),),
        (_replica("batch-0", "east", priority=10),),
        100,
        "east",
        True,
    ),
    Case("no-priority-is-zero-and-gives-way", (_info("east", 1),), (_replica("batch-0", "east"),), 100, "east", True),
    Case(
        "serving-never-gives-way", (_info("east", 1),), (_replica("batch-0", "east", ready=True, priority=10),), 100, ""
    ),
    Case("equal-priority-never-gives-way", (_info("east", 1),), (_replica("batch-0", "east", priority=100),), 100, ""),
    Case("higher-never-gives-way", (_info("east", 1),), (_replica("prod-0", "east", priority=1000),), 100, ""),
    Case(
        "free-room-elsewhere-first",
        (_info("east", 1), _info("west", 1)),
        (_replica("batch-0", "east", priority=10),),
        100,
        "west",
    ),
    Case(
        "zero-takes-the-place-of-a-negative-priority",
        (_info("east", 1),),
        (_replica("batch-0", "east", priority=-5),),
        0,
        "east",
        True,
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_a_replica_that_fits_nowhere_takes_the_place_of_lower_priorities_not_serving(case: Case) -> None:
    got = _schedule(case.clusters, case.fleet, priority=case.priority)
    assert [p.cluster for p in got.placements] == ([case.where] if case.where else [])
    assert [p.preempts for p in got.placements] == ([case.preempts] if case.where else [])
    if not case.where:
        assert got.unplaced[0].reason == "InsufficientCapacity"


@pytest.mark.parametrize(
    ("fleet", "overcommitted"),
    [
        pytest.param(
            (
                _replica("batch-0", "east", priority=10, created="T1"),
                _replica("prod-0", "east", priority=100, created="T2"),
            ),
            ("ml/batch-0",),
            id="newer-higher-priority-keeps-the-pool",
        ),
        pytest.param(
            (_replica("a-0", "east", created="T1"), _replica("b-0", "east", created="T2")),
            ("ml/b-0",),
            id="equal-priority-oldest-keeps-it",
        ),
        pytest.param(
            (_replica("batch-0", "east", ready=True, priority=10), _replica("prod-0", "east", priority=100)),
            ("ml/prod-0",),
            id="serving-keeps-it-whatever-the-priority",
        ),
    ],
)
def test_a_full_pool_packs_replicas_not_serving_highest_priority_first(
    fleet: tuple[Listed, ...], overcommitted: tuple[str, ...]
) -> None:
    assert summarize(_info("east", 1), {"h100": 8}, fleet).overcommitted == overcommitted


def test_a_pool_publishes_what_each_higher_priority_may_have() -> None:
    fleet = (
        _replica("serving-0", "east", ready=True, priority=0),
        _replica("batch-0", "east", priority=10),
        _replica("exp-0", "east", priority=-5),
    )
    pool = summarize(_info("east", 3), {"h100": 8}, fleet).pools["gpu"]
    assert pool.node_free.free == 0
    # Above 10: both give way; above -5 (up to 10): only exp-0.
    assert [(q, n.free) for q, n in pool.preemptible] == [(10, 16), (-5, 8)]


def test_the_preempting_replica_is_packed_first_and_its_victim_moves() -> None:
    """The round after: the cluster finds the lower priority beyond it; its deployment places it elsewhere."""
    east, west = _info("east", 1), _info("west", 1)
    batch = _replica("batch-0", "east", priority=10, created="T1")
    first = _schedule((east,), (batch,), priority=100)
    placed = first.placements[0]
    assert placed.preempts
    prod = _replica("llm-0", "east", priority=100, created="T2")  # as composed where it was placed
    assert summarize(east, {"h100": 8}, (batch, prod)).overcommitted == ("ml/batch-0",)
    # The batch deployment moves its replica to west, where there is room now.
    facts = [
        summary_facts(east, summarize(east, {"h100": 8}, (batch, prod))),
        summary_facts(west, summarize(west, {"h100": 8}, ())),
    ]
    view = build_view(facts, [H100], matcher=fake_matcher)
    dep = deployment("batch", replicas=1, shape=TP8)
    got = schedule(dep, view, existing=Existing(replicas={0: batch.occupancy}, listed=[batch.occupancy]))
    assert [(p.replica, p.cluster) for p in got.placements] == [("batch-0", "west")]
