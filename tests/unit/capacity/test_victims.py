"""Which serving replicas give way to a newcomer that does not fit: the fewest, the lowest priorities, the newest.

Each case also works out the rule the cluster used before (``_first_run_that_fits``: take the
ranking's best candidates one by one, lowest priority and newest first, until the newcomer fits),
so the table shows where that took more replicas than needed, or none although one would do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from modelplane.capacity import NodeFree, RoleOccupancy
from modelplane.capacity import victims as module
from modelplane.capacity.victims import choose_victims, take_roles
from modelplane.topology import Footprint, Role


@dataclass(frozen=True)
class _Serving:
    name: str
    priority: int
    created: str
    roles: tuple[RoleOccupancy, ...]

    @property
    def key(self) -> str:
        return f"ml/{self.name}"


def _tp(tensor: int, *, workers: int = 1) -> Footprint:
    return Footprint(nodes_per_worker=1, gpus_per_node=tensor, workers=workers)


def _on(pool: str, tensor: int, *, workers: int = 1) -> tuple[RoleOccupancy, ...]:
    return (RoleOccupancy(Role.UNIFIED, pool, _tp(tensor, workers=workers)),)


def _serving(name: str, priority: int, tensor: int, *, created: str = "", pool: str = "gpu") -> _Serving:
    return _Serving(name, priority, created, _on(pool, tensor))


def _full(nodes: int, *, free: Sequence[int] = ()) -> NodeFree:
    """``nodes`` nodes of 8 GPUs, none free but as ``free`` lists (one entry per node with some free)."""
    counts = [0] * 9
    counts[0] = nodes - len(free)
    for f in free:
        counts[f] += 1
    return NodeFree(per_node=8, counts=tuple(counts))


def _first_run_that_fits(
    nodes: dict[str, NodeFree], priority: int, roles: tuple[RoleOccupancy, ...], fleet: Sequence[_Serving]
) -> tuple[str, ...]:
    """The rule before: the ranking's candidates given back one by one, in rank order, until the newcomer fits."""
    pools = {r.pool for r in roles}
    eligible = [v for v in fleet if v.priority < priority and any(r.pool in pools for r in v.roles)]
    ranked = sorted(
        sorted(sorted(eligible, key=lambda v: v.key, reverse=True), key=lambda v: v.created, reverse=True),
        key=lambda v: v.priority,
    )
    freed = dict(nodes)
    taken: list[str] = []
    for v in ranked:
        for role in v.roles:
            freed[role.pool] = freed[role.pool].release(role.footprint)
        taken.append(v.name)
        if take_roles(freed, roles) is not None:
            return tuple(taken)
    return ()


@dataclass(frozen=True)
class Case:
    id: str
    nodes: dict[str, NodeFree]
    fleet: tuple[_Serving, ...]
    want: tuple[str, ...]  # the victims, in rank order; () for none
    before: tuple[str, ...]  # what the first run of the ranking that fits took
    newcomer: tuple[RoleOccupancy, ...] = _on("gpu", 8)
    priority: int = 100


CASES = [
    Case(
        # One node: two 2-GPU replicas rank first (lower priority), but one 4-GPU replica frees enough alone.
        "one-larger-instead-of-two-smaller",
        {"gpu": _full(1)},
        (_serving("a", 5, 2, created="T2"), _serving("b", 5, 2, created="T1"), _serving("c", 6, 4)),
        want=("c",),
        before=("a", "b"),
        newcomer=_on("gpu", 4),
    ),
    Case(
        # x ranks first but its 2 GPUs free no node for an 8-GPU worker: y alone does.
        "one-that-frees-nothing-usable-is-left-out",
        {"gpu": _full(2)},
        (_serving("x", 5, 2), _serving("y", 6, 8)),
        want=("y",),
        before=("x", "y"),
    ),
    Case(
        # Given back one by one in rank order, the two 4-GPU replicas' shares spread over both nodes and s's
        # 8 GPUs find no node to go back to: the first run found nothing. Larger shares back first, s alone fits.
        "a-larger-one-the-ranking-reaches-last",
        {"gpu": _full(2)},
        (_serving("a", 5, 4, created="T2"), _serving("b", 5, 4, created="T1"), _serving("s", 10, 8)),
        want=("s",),
        before=(),
    ),
    Case(
        "as-few-then-the-lowest-priority",
        {"gpu": _full(2)},
        (_serving("mid", 10, 8, created="T9"), _serving("low", 5, 8, created="T1")),
        want=("low",),
        before=("low",),
    ),
    Case(
        "as-few-then-the-newest",
        {"gpu": _full(2)},
        (_serving("old", 5, 8, created="T1"), _serving("new", 5, 8, created="T2")),
        want=("new",),
        before=("new",),
    ),
    Case(
        "two-when-one-is-not-enough",
        {"gpu": _full(2)},
        (_serving("a", 5, 8, created="T1"), _serving("b", 5, 8, created="T2"), _serving("c", 6, 8)),
        want=("b", "a"),
        before=("b", "a"),
        newcomer=_on("gpu", 8, workers=2),
    ),
    Case(
        # The lowest-ranked of three 2-sets that fit is taken: x frees nothing the two 8-GPU workers can use.
        "the-best-ranked-set-of-the-fewest",
        {"gpu": _full(3)},
        (
            _serving("x", 1, 2),
            _serving("b", 5, 8, created="T2"),
            _serving("c", 5, 8, created="T1"),
            _serving("d", 9, 8),
        ),
        want=("b", "c"),
        before=("x", "b", "c"),
        newcomer=_on("gpu", 8, workers=2),
    ),
    Case(
        # A share given back goes to the fullest node with room for it: a's 4 GPUs do not complete the
        # node that has 4 free (the real pods may sit elsewhere). big frees a whole node.
        "a-share-goes-back-to-the-fullest-node",
        {"gpu": _full(2, free=[4])},
        (_serving("a", 5, 4, created="T2"), _serving("big", 5, 8, created="T1")),
        want=("big",),
        before=(),
    ),
    Case(
        "none-when-all-of-them-are-not-enough",
        {"gpu": _full(1)},
        (_serving("a", 5, 4), _serving("b", 5, 2)),
        want=(),
        before=(),
    ),
    Case(
        "equal-or-higher-priorities-never",
        {"gpu": _full(2)},
        (_serving("same", 100, 8), _serving("higher", 200, 8)),
        want=(),
        before=(),
    ),
    Case(
        "only-replicas-on-its-pools",
        {"gpu": _full(1), "other": _full(1)},
        (_serving("elsewhere", 5, 8, pool="other"),),
        want=(),
        before=(),
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_the_fewest_serving_replicas_give_way_then_the_lowest_priorities_then_the_newest(case: Case) -> None:
    got = choose_victims(case.nodes, case.priority, case.newcomer, case.fleet)
    assert (tuple(v.name for v in got.chosen) if got is not None else ()) == case.want
    assert _first_run_that_fits(case.nodes, case.priority, case.newcomer, case.fleet) == case.before
    if got is None:
        return
    # The pools afterwards hold the newcomer in the victims' place: it took what they gave back.
    taken = {r.pool: r.footprint.total_gpus for r in case.newcomer}
    given = {p: sum(r.footprint.total_gpus for v in got.chosen for r in v.roles if r.pool == p) for p in taken}
    assert {p: got.nodes[p].free for p in taken} == {p: case.nodes[p].free + given[p] - taken[p] for p in taken}
    # In any order, the same answer.
    for order in (tuple(reversed(case.fleet)), tuple(sorted(case.fleet, key=lambda v: v.name))):
        assert choose_victims(case.nodes, case.priority, case.newcomer, order) == got


def test_past_its_budget_the_search_settles_for_the_first_run_of_the_ranking_that_fits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (case,) = [c for c in CASES if c.id == "the-best-ranked-set-of-the-fewest"]
    monkeypatch.setattr(module, "_BUDGET", 0)
    got = choose_victims(case.nodes, case.priority, case.newcomer, case.fleet)
    assert got is not None
    assert tuple(v.name for v in got.chosen) == case.before


def test_many_interchangeable_replicas_are_searched_by_shape_not_one_by_one() -> None:
    # 120 candidates of two shapes on 30 full nodes; the newcomer needs three whole nodes. The search
    # looks at how many of each shape (4 sets of 3), not at the 280,840 sets of three replicas.
    halves = [_Serving(f"half-{i:02}", 3, f"T{i:02}", _on("gpu", 4, workers=2)) for i in range(60)]
    wholes = [_serving(f"whole-{i:02}", 5, 8, created=f"T{i:02}") for i in range(60)]
    nodes, newcomer = {"gpu": _full(30)}, _on("gpu", 8, workers=3)
    got = choose_victims(nodes, 100, newcomer, [*halves, *wholes])
    assert got is not None
    assert [v.name for v in got.chosen] == ["whole-59", "whole-58", "whole-57"]
    # The ranking's run took 17 replicas of the lower priority: the first 15 only spread their halves
    # over the 30 nodes (a share given back goes to the fullest node that has room for it).
    before = _first_run_that_fits(nodes, 100, newcomer, [*halves, *wholes])
    assert before == tuple(f"half-{i:02}" for i in range(59, 42, -1))
