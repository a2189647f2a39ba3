from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from modelplane.capacity import NodeFree
from modelplane.topology import Footprint


def nodes_of(per_node: int, free: list[int]) -> NodeFree:
    counts = Counter(free)
    return NodeFree(per_node, tuple(counts.get(f, 0) for f in range(per_node + 1)))


def free_list(nodes: NodeFree) -> list[int]:
    return sorted(f for f, n in enumerate(nodes.counts) for _ in range(n))


def brute_max_workers(free: list[int], g: int, k: int) -> int:
    """Exhaustive search: the most workers of k distinct nodes with g GPUs each."""
    best = 0

    def full(state: tuple[int, ...], placed: int, seen: set[tuple[int, ...]]) -> None:
        nonlocal best
        best = max(best, placed)
        if state in seen:
            return
        seen.add(state)
        for chosen in combinations(range(len(state)), k):
            if all(state[i] >= g for i in chosen):
                nxt = list(state)
                for i in chosen:
                    nxt[i] -= g
                full(tuple(sorted(nxt)), placed + 1, seen)

    full(tuple(sorted(free)), 0, set())
    return best


@pytest.mark.parametrize(
    ("free", "role", "want"),
    [
        pytest.param([8], Footprint(1, 4, 2), [0], id="two-tp4-share-a-node"),
        pytest.param([8, 8], Footprint(1, 4, 1), [4, 8], id="tp4-keeps-a-node-whole"),
        pytest.param([4, 8], Footprint(1, 4, 1), [0, 8], id="best-fit-tightest-node"),
        pytest.param([8, 8, 8], Footprint(2, 8, 1), [0, 0, 8], id="tp8-pp2-two-nodes"),
        pytest.param([8, 4, 4], Footprint(2, 4, 2), [0, 0, 0], id="multi-node-most-shares-first"),
        pytest.param([1, 1, 1, 1], Footprint(1, 1, 3), [0, 0, 0, 1], id="single-gpus"),
    ],
)
def test_take(free: list[int], role: Footprint, want: list[int]) -> None:
    got = nodes_of(8, free).take(role)
    assert got is not None
    assert free_list(got) == sorted(want)


@pytest.mark.parametrize(
    ("free", "role"),
    [
        pytest.param([8], Footprint(2, 8, 1), id="one-node-for-two"),
        pytest.param([4, 4], Footprint(1, 8, 1), id="fragmented"),
        pytest.param([8], Footprint(1, 4, 3), id="three-tp4-on-one-node"),
        pytest.param([], Footprint(1, 1, 1), id="empty-pool"),
    ],
)
def test_take_refuses(free: list[int], role: Footprint) -> None:
    nodes = nodes_of(8, free)
    assert not nodes.fits(role)
    assert nodes.take(role) is None


def test_gpus_per_node_above_the_node_never_fit() -> None:
    assert NodeFree.empty(nodes=4, per_node=8).max_workers(16, 1) == 0


def test_empty() -> None:
    nodes = NodeFree.empty(nodes=3, per_node=8)
    assert (nodes.nodes, nodes.free, nodes.largest) == (3, 24, 8)
    assert NodeFree.empty(nodes=0, per_node=8).largest == 0


def test_hold_reports_what_does_not_fit() -> None:
    nodes, overflow = nodes_of(8, [8, 4]).occupy(Footprint(1, 8, 2))
    assert free_list(nodes) == [0, 0]
    assert overflow == 4


def test_use_fills_the_most_used_nodes_first() -> None:
    nodes, left = nodes_of(8, [8, 8, 8, 8]).use(12)
    assert free_list(nodes) == [0, 4, 8, 8]
    assert left == 0
    nodes, left = nodes_of(8, [2, 8]).use(12)
    assert free_list(nodes) == [0, 0]
    assert left == 2


small_pools = st.tuples(
    st.sampled_from([1, 2, 4, 8]).flatmap(lambda p: st.tuples(st.just(p), st.lists(st.integers(0, p), max_size=5))),
    st.integers(1, 8),
    st.integers(1, 3),
)


@given(small_pools)
def test_max_workers_is_exact(case: tuple[tuple[int, list[int]], int, int]) -> None:
    (per_node, free), g, k = case
    got = nodes_of(per_node, free).max_workers(g, k)
    want = brute_max_workers(free, g, k) if g <= per_node else 0
    assert got == want


@given(small_pools, st.integers(1, 6))
def test_take_places_exactly_what_fits(case: tuple[tuple[int, list[int]], int, int], workers: int) -> None:
    (per_node, free), g, k = case
    nodes = nodes_of(per_node, free)
    role = Footprint(k, g, workers)
    after = nodes.take(role)
    assert (after is not None) == (nodes.max_workers(g, k) >= workers)
    if after is not None:
        assert after.nodes == nodes.nodes
        assert nodes.free - after.free == role.total_gpus
        assert all(n >= 0 for n in after.counts)


@given(small_pools, st.integers(1, 6))
def test_hold_accounts_for_every_gpu(case: tuple[tuple[int, list[int]], int, int], workers: int) -> None:
    (per_node, free), g, k = case
    g = min(g, per_node)
    nodes = nodes_of(per_node, free)
    after, overflow = nodes.occupy(Footprint(k, g, workers))
    assert after.nodes == nodes.nodes
    assert nodes.free - after.free + overflow == workers * k * g
    assert overflow == 0 or after.max_workers(g, k) == 0


@given(st.lists(st.integers(0, 8), max_size=6), st.integers(0, 60))
def test_use_accounts_for_every_gpu(free: list[int], gpus: int) -> None:
    nodes = nodes_of(8, free)
    after, left = nodes.use(gpus)
    assert after.nodes == nodes.nodes
    assert nodes.free - after.free == gpus - left
    assert left == max(0, gpus - nodes.free)


@pytest.mark.parametrize(
    ("free", "role", "want"),
    [
        pytest.param([0], Footprint(1, 8, 1), [8], id="whole-node-back"),
        pytest.param([4, 0, 8], Footprint(1, 4, 1), [4, 4, 8], id="to-the-fewest-free-node"),
        pytest.param([0, 0, 4, 8], Footprint(2, 4, 1), [4, 4, 4, 8], id="multi-node-to-the-two-fewest-free"),
        # Conservative: the second worker's GPUs may well be on the other node, so they are not gathered.
        pytest.param([0, 0], Footprint(1, 4, 3), [4, 8], id="workers-spread-before-they-gather"),
        pytest.param([0, 8], Footprint(2, 8, 1), [8, 8], id="fewer-nodes-than-the-worker-gives-what-fits"),
        pytest.param([8, 8], Footprint(1, 4, 1), [8, 8], id="an-idle-pool-takes-nothing-back"),
        pytest.param([0, 0], Footprint(1, 16, 1), [0, 0], id="more-than-a-node-has"),
        pytest.param([], Footprint(1, 1, 1), [], id="empty-pool"),
    ],
)
def test_release(free: list[int], role: Footprint, want: list[int]) -> None:
    assert free_list(nodes_of(8, free).release(role)) == sorted(want)


def test_occupy_all_is_order_independent() -> None:
    roles = [Footprint(1, 4, 1), Footprint(2, 8, 1), Footprint(1, 2, 3)]
    nodes = NodeFree.empty(nodes=3, per_node=8)
    assert nodes.occupy_all(roles) == nodes.occupy_all(reversed(roles))
    after, overflow = nodes.occupy_all(roles)
    assert (free_list(after), overflow) == ([0, 0, 0], 2)  # 26 GPUs on 24


shapes = st.sampled_from([1, 2, 4, 8]).flatmap(
    lambda p: st.tuples(st.just(p), st.integers(1, p), st.integers(1, 3), st.integers(1, 6))
)


@given(st.integers(0, 6), shapes)
def test_release_undoes_the_only_replica_of_a_pool(nodes: int, shape: tuple[int, int, int, int]) -> None:
    per_node, g, k, workers = shape
    empty = NodeFree.empty(nodes=nodes, per_node=per_node)
    role = Footprint(k, g, workers)
    taken = empty.take(role)
    assume(taken is not None)
    assert taken is not None
    assert taken.release(role) == empty


@given(small_pools, st.integers(1, 6))
def test_release_gives_back_at_most_the_footprint(case: tuple[tuple[int, list[int]], int, int], workers: int) -> None:
    (per_node, free), g, k = case
    nodes = nodes_of(per_node, free)
    role = Footprint(k, g, workers)
    after = nodes.release(role)
    assert after.per_node == per_node
    assert len(after.counts) == per_node + 1
    assert all(n >= 0 for n in after.counts)
    assert after.nodes == nodes.nodes
    assert 0 <= after.free - nodes.free <= role.total_gpus
