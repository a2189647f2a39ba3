"""Serving replicas that give way for physical capacity, surge-first.

A replica of a higher priority that fits nowhere, not even in the place of lower priorities not
serving yet, is placed in the place of serving replicas of a strictly lower priority whose
namespace's FleetQuotas all say ``preemption: LowerPriority`` (``modelplane.ai/preemption``). The
cluster decides which (``status.capacity.preempted``, the arbiter under races); their deployments
move them like replicas leaving a draining cluster; the newcomer waits for them, pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pytest

from modelplane.capacity import ClusterInfo, Listed, cluster_info, replica_occupancy, summarize
from modelplane.capacity.published import PoolClass, capacity_status
from modelplane.preview.explain import _step_lines
from modelplane.scheduling import Existing, Schedule, Strategy, schedule
from modelplane.scheduling.explain import explain
from modelplane.scheduling.placement import HoldReason
from modelplane.scheduling.quotas import Quotas
from modelplane.scheduling.view import FleetView, build_view, summary_facts
from modelplane.topology import Role
from tests.unit.fleet import Pool, Shape, cluster, deployment, fake_matcher, gpu_class, replica

H100 = gpu_class("h100")
TP8 = Shape(tensor=8, cel="true")
TP4 = Shape(tensor=4, cel="true")


def _info(name: str, nodes: int) -> ClusterInfo:
    info = cluster_info(cluster(name, Pool("gpu", "h100", nodes)))
    assert info is not None
    return info


def _replica(
    name: str,
    on: str = "east",
    *,
    ready: bool = False,
    priority: int | None = None,
    created: str = "",
    yields: bool = False,
    shape: Shape = TP8,
) -> Listed:
    body = replica(
        name,
        cluster=on,
        pools={Role.UNIFIED: "gpu"},
        shapes={Role.UNIFIED: shape},
        deployment=name.rsplit("-", 1)[0],
        ready=ready,
        priority=("p", priority) if priority is not None else None,
    )
    occupancy = replica_occupancy(body)
    assert occupancy is not None
    return Listed(replace(occupancy, preemptible=yields), created)


def _view(clusters: Sequence[ClusterInfo], listed: Sequence[Listed], *, classes: bool = True) -> FleetView:
    facts = [
        summary_facts(c, summarize(c, {"h100": 8}, [r for r in listed if r.occupancy.cluster == c.name]))
        for c in clusters
    ]
    return build_view(facts, [H100] if classes else [], matcher=fake_matcher)


def _schedule(
    name: str,
    clusters: Sequence[ClusterInfo],
    listed: Sequence[Listed],
    *,
    priority: int,
    replicas: int = 1,
    max_unavailable: int = 0,
    classes: bool = True,
) -> Schedule:
    """Deployment ``name`` of 8-GPU replicas, with its own replicas as listed, on the fleet as it is published."""
    own = {int(r.occupancy.name.rsplit("-", 1)[1]): r.occupancy for r in listed if r.occupancy.name.startswith(name)}
    existing = Existing(
        replicas=own,
        listed=list(own.values()),
        revision="",
        strategy=Strategy(max_surge=1, max_unavailable=max_unavailable),
    )
    dep = deployment(name, replicas=replicas, shape=TP8)
    return schedule(dep, _view(clusters, listed, classes=classes), existing=existing, quotas=Quotas((), priority))


# --- Which serving replicas the cluster gives to a higher priority ---


@dataclass(frozen=True)
class PackCase:
    id: str
    fleet: tuple[Listed, ...]
    nodes: int = 1
    preempted: tuple[tuple[str, str], ...] = ()
    overcommitted: tuple[str, ...] = ()


PACK_CASES = [
    PackCase(
        "lower-serving-that-consents-gives-way",
        (_replica("batch-0", ready=True, priority=10, yields=True), _replica("prod-0", priority=100)),
        preempted=(("ml/batch-0", "ml/prod-0"),),
    ),
    PackCase(
        "without-consent-it-stays",
        (_replica("batch-0", ready=True, priority=10), _replica("prod-0", priority=100)),
        overcommitted=("ml/prod-0",),
    ),
    PackCase(
        "equal-priority-stays",
        (_replica("batch-0", ready=True, priority=100, yields=True), _replica("prod-0", priority=100)),
        overcommitted=("ml/prod-0",),
    ),
    PackCase(
        "lowest-priority-first",
        (
            _replica("low-0", ready=True, priority=5, yields=True, shape=TP4),
            _replica("mid-0", ready=True, priority=10, yields=True, shape=TP4),
            _replica("prod-0", priority=100, shape=TP4),
        ),
        preempted=(("ml/low-0", "ml/prod-0"),),
    ),
    PackCase(
        "newest-first-within-a-priority",
        (
            _replica("a-0", ready=True, priority=10, yields=True, created="T1", shape=TP4),
            _replica("b-0", ready=True, priority=10, yields=True, created="T2", shape=TP4),
            _replica("prod-0", priority=100, shape=TP4),
        ),
        preempted=(("ml/b-0", "ml/prod-0"),),
    ),
    PackCase(
        "as-many-as-it-needs",
        (
            _replica("a-0", ready=True, priority=10, yields=True, created="T1", shape=TP4),
            _replica("b-0", ready=True, priority=10, yields=True, created="T2", shape=TP4),
            _replica("prod-0", priority=100),
        ),
        preempted=(("ml/a-0", "ml/prod-0"), ("ml/b-0", "ml/prod-0")),
    ),
    PackCase(
        # The fewest first: one 8-GPU replica of priority 10 rather than the two 4-GPU ones of priority 5
        # (whose GPUs, given back, would not be known to sit on one node: modelplane.capacity.victims).
        "the-fewest-then-the-lowest-priorities",
        (
            _replica("big-0", ready=True, priority=10, yields=True),
            _replica("a-0", ready=True, priority=5, yields=True, created="T2", shape=TP4),
            _replica("b-0", ready=True, priority=5, yields=True, created="T1", shape=TP4),
            _replica("prod-0", priority=100),
        ),
        nodes=2,
        preempted=(("ml/big-0", "ml/prod-0"),),
    ),
    PackCase(
        "none-taken-when-all-of-them-are-not-enough",
        (
            _replica("a-0", ready=True, priority=10, yields=True, shape=TP4),
            _replica("keep-0", ready=True, priority=10, shape=TP4),
            _replica("prod-0", priority=100),
        ),
        overcommitted=("ml/prod-0",),
    ),
    PackCase(
        "a-race-the-cluster-arbitrates-highest-then-oldest",
        (
            _replica("batch-0", ready=True, priority=10, yields=True),
            _replica("prod-0", priority=100, created="T2"),
            _replica("gold-0", priority=100, created="T1"),
        ),
        preempted=(("ml/batch-0", "ml/gold-0"),),
        overcommitted=("ml/prod-0",),
    ),
    PackCase(
        "not-serving-lower-ones-give-way-first",
        (
            _replica("batch-0", ready=True, priority=10, yields=True, shape=TP4),
            _replica("wait-0", priority=10, shape=TP4),
            _replica("prod-0", priority=100, shape=TP4),
        ),
        overcommitted=("ml/wait-0",),
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PACK_CASES])
def test_a_cluster_gives_consenting_serving_replicas_of_a_lower_priority_to_one_that_does_not_fit(
    case: PackCase,
) -> None:
    got = summarize(_info("east", case.nodes), {"h100": 8}, case.fleet)
    assert got.preempted == case.preempted
    assert got.overcommitted == case.overcommitted
    pool = got.pools["gpu"]
    gone = {v for v, _ in case.preempted}
    assert not gone & set(pool.counted)  # their GPUs are the newcomer's: no longer counted as theirs
    assert pool.node_free.free >= 0
    # The arbiter decides the same whatever order its replicas are listed in.
    assert summarize(_info("east", case.nodes), {"h100": 8}, tuple(reversed(case.fleet))) == got


def test_a_pool_publishes_what_a_higher_priority_may_have_once_serving_replicas_give_way() -> None:
    fleet = (
        _replica("low-0", ready=True, priority=5, yields=True, shape=TP4),
        _replica("mid-0", ready=True, priority=10, yields=True, shape=TP4),
        _replica("prod-0", ready=True, priority=1000, yields=True, shape=TP4),
        _replica("keep-0", ready=True, priority=1, shape=TP4),
    )
    summary = summarize(_info("east", 2), {"h100": 8}, fleet)
    pool = summary.pools["gpu"]
    assert pool.node_free.free == 0
    assert [(q, n.free) for q, n in pool.preemptible_serving] == [(1000, 12), (10, 8), (5, 4)]
    status = capacity_status(_info("east", 2).pools, {"h100": PoolClass(8, None, None)}, summary)
    assert status["pools"][0]["preemptibleServing"][-1] == {"priority": 5, "nodesByFree": {"4": 1, "0": 1}}
    assert "preempted" not in status


# --- Where the deployment places a replica that fits nowhere ---


@dataclass(frozen=True)
class PlaceCase:
    id: str
    clusters: tuple[ClusterInfo, ...]
    fleet: tuple[Listed, ...]
    priority: int = 100
    where: str = ""
    preempts: bool = False
    serving: bool = False


EAST, WEST = _info("east", 1), _info("west", 1)
CONSENTING = _replica("batch-0", ready=True, priority=10, yields=True)
PLACE_CASES = [
    PlaceCase("serving-that-consents-gives-way", (EAST,), (CONSENTING,), where="east", serving=True),
    PlaceCase("serving-without-consent-stays", (EAST,), (_replica("batch-0", ready=True, priority=10),)),
    PlaceCase("equal-priority-stays", (EAST,), (CONSENTING,), priority=10),
    PlaceCase(
        "free-room-elsewhere-first",
        (EAST, WEST),
        (CONSENTING,),
        where="west",
    ),
    PlaceCase(
        "not-serving-lower-ones-first",
        (EAST, WEST),
        (CONSENTING, _replica("wait-0", "west", priority=10)),
        where="west",
        preempts=True,
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PLACE_CASES])
def test_a_replica_that_fits_nowhere_takes_the_place_of_consenting_serving_replicas_last(case: PlaceCase) -> None:
    got = _schedule("llm", case.clusters, case.fleet, priority=case.priority)
    assert [p.cluster for p in got.placements] == ([case.where] if case.where else [])
    assert [(p.preempts, p.preempts_serving) for p in got.placements] == (
        [(case.preempts, case.serving)] if case.where else []
    )
    if not case.where:
        assert got.unplaced[0].reason == "InsufficientCapacity"


# --- The steps: the newcomer waits, the victim moves surge-first, then the newcomer runs ---


def test_a_serving_replica_gives_way_surge_first_and_the_newcomer_waits_for_it() -> None:
    east, west = _info("east", 1), _info("west", 1)
    batch = _replica("batch-0", ready=True, priority=10, yields=True, created="T1")
    other = _replica("other-0", "west", ready=True, priority=10, created="T1")  # west is full too
    # 1. llm (priority 100) fits nowhere: placed on east in the place of batch-0.
    first = _schedule("llm", [east, west], [batch, other], priority=100)
    assert [(p.replica, p.cluster, p.preempts_serving) for p in first.placements] == [("llm-0", "east", True)]
    llm = _replica("llm-0", priority=100, created="T2")
    fleet = [batch, other, llm]
    # 2. east gives batch-0 to llm-0; llm-0 waits for it, pending (placed, not unplaced).
    assert summarize(east, {"h100": 8}, [batch, llm]).preempted == (("ml/batch-0", "ml/llm-0"),)
    waiting = _schedule("llm", [east, west], fleet, priority=100)
    assert [p.replica for p in waiting.placements] == ["llm-0"]
    assert waiting.unplaced == ()
    assert [(w.replica, w.releasing, w.preempted) for w in waiting.pending] == [("llm-0", ("ml/batch-0",), True)]
    # 3. batch (maxUnavailable 0) has no room anywhere: batch-0 goes all the same, one at a time.
    stuck = _schedule("batch", [east, west], fleet, priority=10)
    assert stuck.retired == ("batch-0",)
    assert stuck.preempted == ("batch-0",)
    # 4. With room on a third cluster, it surges first and stays until its replacement serves.
    north = _info("north", 1)
    surging = _schedule("batch", [east, west, north], fleet, priority=10)
    assert surging.retired == ()
    assert {p.replica: (p.cluster, p.state) for p in surging.placements} == {
        "batch-0": ("east", "Leaving"),
        "batch-1": ("north", "Surge"),
    }
    held = next(p.held for p in surging.placements if p.replica == "batch-0")
    assert held is not None
    assert held.message == (
        "ml/llm-0, of a higher priority, takes its place on InferenceCluster east"
        " (its FleetQuota allows preemption LowerPriority)"
    )
    replacement = _replica("batch-1", "north", ready=True, priority=10, yields=True, created="T3")
    served = _schedule("batch", [east, west, north], [*fleet, replacement], priority=10)
    assert served.retired == ("batch-0",)
    assert served.preempted == ("batch-0",)
    # 5. batch-0 gone: llm-0 fits, nothing is preempted any more.
    after = summarize(east, {"h100": 8}, [llm])
    assert after.preempted == ()
    assert after.overcommitted == ()


def test_a_victim_whose_class_is_missing_is_held_where_it_is_not_retired() -> None:
    # As in step 3 above, batch-0 gives way with no room anywhere, and goes one at a time; with its pool's
    # InferenceClass missing, that its place is given away cannot be checked: it is held, not retired.
    east, west = _info("east", 1), _info("west", 1)
    fleet = [
        _replica("batch-0", ready=True, priority=10, yields=True, created="T1"),
        _replica("other-0", "west", ready=True, priority=10, created="T1"),
        _replica("llm-0", priority=100, created="T2"),
    ]
    assert _schedule("batch", [east, west], fleet, priority=10).retired == ("batch-0",)
    got = _schedule("batch", [east, west], fleet, priority=10, classes=False)
    assert got.retired == ()
    (held,) = [p.held for p in got.placements if p.replica == "batch-0"]
    assert held is not None
    assert held.reason == HoldReason.CLASS_NOT_FOUND


@pytest.mark.parametrize(
    ("max_unavailable", "retired"),
    [
        pytest.param(0, ("batch-0",), id="max-unavailable-0-one-at-a-time"),
        pytest.param(1, ("batch-0",), id="max-unavailable-1"),
        pytest.param(2, ("batch-0", "batch-1"), id="max-unavailable-2-both"),
    ],
)
def test_without_room_the_victims_go_within_their_rollout_budget(
    max_unavailable: int, retired: tuple[str, ...]
) -> None:
    east = _info("east", 1)
    victims = [
        _replica(f"batch-{i}", ready=True, priority=10, yields=True, created=f"T{i}", shape=TP4) for i in range(2)
    ]
    llm = _replica("llm-0", priority=100, created="T9")
    assert summarize(east, {"h100": 8}, [*victims, llm]).preempted == (
        ("ml/batch-0", "ml/llm-0"),
        ("ml/batch-1", "ml/llm-0"),
    )
    own = {i: v.occupancy for i, v in enumerate(victims)}
    dep = deployment("batch", replicas=2, shape=TP4)
    got = schedule(
        dep,
        _view([east], [*victims, llm]),
        existing=Existing(replicas=own, listed=list(own.values()), strategy=Strategy(1, max_unavailable)),
        quotas=Quotas((), 10),
    )
    assert got.retired == retired


def test_nothing_gives_way_while_a_replica_does_not_say_whether_it_is_ready() -> None:
    east = _info("east", 1)
    batch = _replica("batch-0", ready=True, priority=10, yields=True, shape=TP4)
    unsure = _replica("batch-1", ready=True, priority=10, shape=TP4)
    llm = _replica("llm-0", priority=100)
    own = {0: batch.occupancy, 1: unsure.occupancy}
    got = schedule(
        deployment("batch", replicas=2, shape=TP4),
        _view([east], [batch, unsure, llm]),
        existing=Existing(replicas=own, listed=list(own.values()), unsure=frozenset({1})),
        quotas=Quotas((), 10),
    )
    assert got.retired == ()


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PLACE_CASES])
def test_explain_agrees_with_the_scheduler_on_whose_place_it_takes(case: PlaceCase) -> None:
    view = _view(case.clusters, case.fleet)
    got = explain(deployment("llm", replicas=1, shape=TP8), view, quotas=Quotas((), case.priority))
    (step,) = got.steps
    assert step.chosen == case.where
    said = "serving replicas of a lower priority" if case.serving else "not serving yet" if case.preempts else ""
    assert (said in step.preempts) if said else step.preempts == ""
    if said:
        assert any(said in line for line in _step_lines(got))
