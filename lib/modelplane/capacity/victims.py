"""Which serving replicas give way to a replica that does not fit: the fewest, the lowest priorities, the newest.

A cluster gives a replica of a higher priority that fits nowhere the place of serving
replicas of a strictly lower priority that consent (``modelplane.capacity.summary``,
step 4). Which ones is this module's decision: a minimal set, not the first run of the
preference order that happens to fit, which may take a replica that frees nothing the
newcomer can use (GPUs on another node, too few per node) or two small replicas where
one larger one is enough.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from modelplane.capacity.nodes import NodeFree
from modelplane.capacity.occupancy import RoleOccupancy

# Candidate sets looked at (step 5) before the search settles for the first run of the order that fits.
_BUDGET = 4096


class Candidate(Protocol):
    """A serving replica that may give way, as the cluster lists it."""

    @property
    def key(self) -> str:
        """``namespace/name``."""
        ...

    @property
    def priority(self) -> int:
        """Its priority's value."""
        ...

    @property
    def created(self) -> str:
        """Its ``metadata.creationTimestamp`` (RFC 3339), "" when unknown."""
        ...

    @property
    def roles(self) -> tuple[RoleOccupancy, ...]:
        """Its roles, each on its pool."""
        ...


V = TypeVar("V", bound=Candidate)


@dataclass(frozen=True)
class Victims(Generic[V]):
    """The replicas that give way, and the pools once they have and the newcomer is placed.

    Attributes:
        nodes: Every pool the victims or the newcomer are on, afterwards (the others are as they were).
        chosen: The victims, in the preference order (lowest priority, newest, name).
    """

    nodes: dict[str, NodeFree]
    chosen: tuple[V, ...]


def take_roles(nodes: Mapping[str, NodeFree], roles: Iterable[RoleOccupancy]) -> dict[str, NodeFree] | None:
    """The pools with every role placed, larger shapes first when roles share a pool; None if one does not fit."""
    after: dict[str, NodeFree] = {}
    for role in sorted(roles, key=lambda r: (-r.footprint.gpus_per_node, -r.footprint.nodes_per_worker)):
        taken = after.get(role.pool, nodes[role.pool]).take(role.footprint)
        if taken is None:
            return None
        after[role.pool] = taken
    return after


@dataclass(frozen=True)
class _Class(Generic[V]):
    """Candidates whose roles on the newcomer's pools have the same shapes: they free the same GPUs there."""

    shape: tuple[tuple[str, int, int, int], ...]
    members: tuple[tuple[int, V], ...]  # (rank, candidate), best ranked first
    gives: Mapping[str, int]  # GPUs one member frees on each of the newcomer's pools


def choose_victims(
    nodes: Mapping[str, NodeFree], priority: int, roles: Sequence[RoleOccupancy], candidates: Iterable[V]
) -> Victims[V] | None:
    """The serving replicas that give way to a newcomer of ``priority`` with ``roles``, or None.

    1. Eligible: candidates of a strictly lower priority with a role on one of the newcomer's
       pools, ranked lowest priority first, then newest ("" created counts as oldest), then by
       name (descending).
    2. One is most often enough: the best ranked that makes the newcomer fit alone. Candidates
       whose roles on the newcomer's pools have the same shapes are interchangeable (what a pool
       gets back depends only on the shapes given back there: ``_fit``), so each shape is tried
       once, with its best-ranked candidate.
    3. None when all of them together would not make it fit.
    4. Else the fewest: for k = 2, 3, ... the sets of k that free at least the GPUs the newcomer
       lacks on each of its pools, as counts per shape (each taking the best ranked of its
       shape), best first: compared by their ranks, worst first (the set whose worst-ranked
       victim is best ranked, then the next...), which is lowest priorities, then newest. The
       first that fits is the answer.
    5. Bounded: past ``_BUDGET`` sets looked at, the first run of the ranking that fits.

    Deterministic: the same candidates in any order give the same answer.
    """
    # 1. Eligible, ranked.
    pools = {r.pool for r in roles}
    eligible = [v for v in candidates if v.priority < priority and any(r.pool in pools for r in v.roles)]
    # Newest first within a priority (a stable sort on each key, the last one sorted by first).
    ranked = sorted(eligible, key=lambda v: v.key, reverse=True)
    ranked = sorted(ranked, key=lambda v: v.created, reverse=True)
    ranked = sorted(ranked, key=lambda v: v.priority)
    need = {p: sum(r.footprint.total_gpus for r in roles if r.pool == p) - nodes[p].free for p in pools}
    # 2. One, the best ranked of each shape.
    classes = _classes(ranked, pools)
    for rank, c in sorted((c.members[0][0], c) for c in classes):
        if all(c.gives.get(p, 0) >= n for p, n in need.items()):
            found = _fit(nodes, roles, [(rank, ranked[rank])])
            if found is not None:
                return found
    # 3. All of them.
    if len(ranked) < 2 or _fit(nodes, roles, list(enumerate(ranked))) is None:
        return None
    # 4. The fewest, then the best ranked.
    most = _most(classes, pools)
    looked = 0
    for k in range(2, len(ranked) + 1):
        if any(most[p][k - 1] < n for p, n in need.items()):
            continue  # no k of them free enough
        sets = []
        for counts in _counts(classes, k):
            looked += 1
            if looked > _BUDGET:
                # 5. Bounded.
                return _first_run(nodes, roles, ranked)
            if all(_gives(classes, counts, p) >= n for p, n in need.items()):
                sets.append(_taken(classes, counts))
        for chosen in sorted(sets, key=_worst_first):
            found = _fit(nodes, roles, chosen)
            if found is not None:
                return found
    return None  # unreachable: all of them fit (3), and k reaches them


def _classes(ranked: Sequence[V], pools: set[str]) -> list[_Class[V]]:
    """The ranked candidates by the shapes of their roles on ``pools``, in a fixed order of shapes."""
    members: dict[tuple[tuple[str, int, int, int], ...], list[tuple[int, V]]] = {}
    for rank, v in enumerate(ranked):
        shape = tuple(
            sorted(
                (r.pool, r.footprint.gpus_per_node, r.footprint.nodes_per_worker, r.footprint.workers)
                for r in v.roles
                if r.pool in pools
            )
        )
        members.setdefault(shape, []).append((rank, v))
    out = []
    for shape, listed in sorted(members.items(), key=lambda i: i[0]):
        gives: dict[str, int] = {}
        for pool, g, k, w in shape:
            gives[pool] = gives.get(pool, 0) + g * k * w
        out.append(_Class(shape, tuple(listed), gives))
    return out


def _most(classes: Sequence[_Class[V]], pools: Iterable[str]) -> dict[str, list[int]]:
    """Per pool, the most GPUs any ``k`` candidates free there, at index ``k - 1``."""
    return {
        p: list(itertools.accumulate(sorted((c.gives.get(p, 0) for c in classes for _ in c.members), reverse=True)))
        for p in pools
    }


def _counts(classes: Sequence[_Class[V]], k: int) -> Iterator[tuple[int, ...]]:
    """Every way to take ``k`` candidates: how many of each class (at most its size)."""

    def rest(i: int, left: int) -> Iterator[tuple[int, ...]]:
        if i == len(classes):
            if left == 0:
                yield ()
            return
        room = sum(len(c.members) for c in classes[i + 1 :])
        for t in range(max(0, left - room), min(left, len(classes[i].members)) + 1):
            for tail in rest(i + 1, left - t):
                yield (t, *tail)

    return rest(0, k)


def _gives(classes: Sequence[_Class[V]], counts: Sequence[int], pool: str) -> int:
    """The GPUs the set ``counts`` frees on ``pool``."""
    return sum(t * c.gives.get(pool, 0) for t, c in zip(counts, classes, strict=True))


def _taken(classes: Sequence[_Class[V]], counts: Sequence[int]) -> list[tuple[int, V]]:
    """The candidates the set ``counts`` takes: the best ranked of each class, with their ranks."""
    return [m for t, c in zip(counts, classes, strict=True) for m in c.members[:t]]


def _worst_first(chosen: Sequence[tuple[int, V]]) -> tuple[int, ...]:
    """A set's ranks, worst first: how sets of as many victims compare."""
    return tuple(sorted((rank for rank, _ in chosen), reverse=True))


def _fit(
    nodes: Mapping[str, NodeFree], roles: Sequence[RoleOccupancy], chosen: Sequence[tuple[int, V]]
) -> Victims[V] | None:
    """The pools once ``chosen`` give way and the newcomer is placed; None if it cannot be.

    The victims' workers are given back larger shares first (``NodeFree.release`` puts a share back
    only on a node with room for it, so a large share given back after small ones may find none):
    what a pool gets back depends only on the shapes given back there, not on who gave them.
    """
    given = sorted(
        (role for _, v in chosen for role in v.roles),
        key=lambda r: (-r.footprint.gpus_per_node, -r.footprint.nodes_per_worker, -r.footprint.workers, r.pool),
    )
    freed = dict(nodes)
    for role in given:
        freed[role.pool] = freed[role.pool].release(role.footprint)
    after = take_roles(freed, roles)
    if after is None:
        return None
    return Victims({**freed, **after}, tuple(v for _, v in sorted(chosen, key=lambda i: i[0])))


def _first_run(nodes: Mapping[str, NodeFree], roles: Sequence[RoleOccupancy], ranked: Sequence[V]) -> Victims[V] | None:
    """Step 5: the shortest run of the ranking (its first k) that fits."""
    for k in range(1, len(ranked) + 1):
        found = _fit(nodes, roles, list(enumerate(ranked[:k])))
        if found is not None:
            return found
    return None
