"""The summary an InferenceCluster publishes: the rules of ``summarize``, as a table and as properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.capacity import (
    ClusterInfo,
    ClusterSummary,
    Listed,
    Observed,
    Occupancy,
    PoolInfo,
    RoleOccupancy,
    Source,
    summarize,
)
from modelplane.topology import Footprint, Role

PER_NODE = {"h100": 8, "l4": 1}


def _cluster(*pools: PoolInfo, name: str = "c") -> ClusterInfo:
    return ClusterInfo(name=name, labels={}, cordoned=False, ready=True, not_ready="", pools=pools)


def _pool(name: str = "h100", nodes: int = 2, *, class_name: str = "h100", in_use: int | None = None) -> PoolInfo:
    return PoolInfo(name, class_name, nodes, Observed(Source.KAI, in_use) if in_use is not None else None)


def _tp(tensor: int, *, pipeline: int = 1, workers: int = 1) -> Footprint:
    return Footprint(nodes_per_worker=pipeline, gpus_per_node=tensor, workers=workers)


TP8 = _tp(8)


def _replica(
    name: str,
    pool: str = "h100",
    fp: Footprint = TP8,
    *,
    ready: bool = False,
    created: str = "",
    cluster: str = "c",
    decode: tuple[str, Footprint] | None = None,
) -> Listed:
    roles: tuple[RoleOccupancy, ...]
    if decode is None:
        roles = (RoleOccupancy(Role.UNIFIED, pool, fp),)
    else:
        roles = (RoleOccupancy(Role.PREFILL, pool, fp), RoleOccupancy(Role.DECODE, *decode))
    return Listed(Occupancy("ml", name, None, cluster, roles, ready=ready), created)


def _view(summary: ClusterSummary) -> dict[str, Any]:
    """Per pool: free GPUs of each node, who is counted, GPUs held and overflow; and who is overcommitted."""
    pools = {
        name: {
            "free": sorted((f for f, n in enumerate(p.node_free.counts) for _ in range(n)), reverse=True),
            "counted": list(p.counted),
            "held": p.held,
            "overflow": p.overflow,
        }
        for name, p in summary.pools.items()
    }
    return {"pools": pools, "overcommitted": list(summary.overcommitted)}


def _one(free: list[int], counted: list[str], held: int, overflow: int = 0, *, over: list[str] | None = None) -> Any:
    return {
        "pools": {"h100": {"free": free, "counted": counted, "held": held, "overflow": overflow}},
        "overcommitted": over or [],
    }


@pytest.mark.parametrize(
    ("cluster", "replicas", "want"),
    [
        pytest.param(_cluster(_pool()), [], _one([8, 8], [], 0), id="empty-pool"),
        pytest.param(
            _cluster(_pool()),
            [_replica("a-0", fp=_tp(4), ready=True), _replica("b-0")],
            _one([4, 0], ["ml/a-0", "ml/b-0"], 12),
            id="two-replicas-fit",
        ),
        # Two deployments placed on the same last 8 GPUs at once: the newer placement moves.
        pytest.param(
            _cluster(_pool()),
            [
                _replica("n-0", created="2026-11-26T10:01:00Z"),
                _replica("x-0", ready=True),
                _replica("m-0", created="2026-11-26T10:00:00Z"),
            ],
            _one([0, 0], ["ml/m-0", "ml/x-0"], 16, over=["ml/n-0"]),
            id="race-newer-is-overcommitted",
        ),
        pytest.param(
            _cluster(_pool()),
            [_replica("b-0", created="2026-11-26T10:00:00Z"), _replica("a-0", created="2026-11-26T10:00:00Z")],
            _one([0, 0], ["ml/a-0", "ml/b-0"], 16),
            id="same-age-by-name",
        ),
        pytest.param(
            _cluster(_pool()),
            [
                _replica("old-0", created="2026-11-26T10:00:00Z"),
                _replica("unknown-0"),
                _replica("new-0", fp=_tp(4), created="2026-11-26T10:01:00Z"),
            ],
            _one([0, 0], ["ml/old-0", "ml/unknown-0"], 16, over=["ml/new-0"]),
            id="unknown-age-counts-as-oldest",
        ),
        # Running replicas are never listed: they hold their GPUs whatever the model says.
        pytest.param(
            _cluster(_pool(nodes=1)),
            [_replica("a-0", ready=True), _replica("b-0", ready=True), _replica("c-0")],
            _one([0], ["ml/a-0", "ml/b-0"], 16, 8, over=["ml/c-0"]),
            id="ready-beyond-capacity-is-overflow",
        ),
        # 12 observed, 4 of them the Ready replica's: 8 more are other work, on the most-used nodes.
        pytest.param(
            _cluster(_pool(nodes=4, in_use=12)),
            [_replica("a-0", fp=_tp(4), ready=True), _replica("b-0")],
            _one([8, 4, 0, 0], ["ml/a-0", "ml/b-0"], 12),
            id="observed-usage-no-replica-explains",
        ),
        pytest.param(
            _cluster(_pool(nodes=4, in_use=2)),
            [_replica("a-0", fp=_tp(4), ready=True)],
            _one([8, 8, 8, 4], ["ml/a-0"], 4),
            id="observed-usage-ready-replicas-explain",
        ),
        pytest.param(
            _cluster(_pool(nodes=2, in_use=20)),
            [_replica("a-0", fp=_tp(4))],
            _one([0, 0], [], 0, 4, over=["ml/a-0"]),
            id="observed-beyond-the-nodes",
        ),
        # Decode (2 nodes of 8) first, then two prefill workers of 4 share the third node.
        pytest.param(
            _cluster(_pool(nodes=3)),
            [_replica("d-0", fp=_tp(4, workers=2), decode=("h100", _tp(8, pipeline=2)))],
            _one([0, 0, 0], ["ml/d-0"], 24),
            id="disaggregated-on-one-pool",
        ),
        pytest.param(
            _cluster(_pool(), _pool("l4", 1, class_name="l4")),
            [_replica("x-0", "l4", _tp(1), ready=True), _replica("d-0", fp=_tp(8), decode=("l4", _tp(1)))],
            {
                "pools": {
                    "h100": {"free": [8, 8], "counted": [], "held": 0, "overflow": 0},
                    "l4": {"free": [0], "counted": ["ml/x-0"], "held": 1, "overflow": 0},
                },
                "overcommitted": ["ml/d-0"],
            },
            id="disaggregated-all-roles-or-nothing",
        ),
        pytest.param(
            _cluster(_pool()),
            [
                _replica("gone-0", "gone"),
                _replica("d-0", fp=_tp(8), decode=("gone", _tp(8))),
                _replica("o-0", cluster="o"),
            ],
            _one([8, 0], ["ml/d-0"], 8),
            id="pool-not-in-the-cluster-and-other-clusters-ignored",
        ),
        pytest.param(
            _cluster(_pool(), _pool("tpu", 4, class_name="tpu")),
            [_replica("t-0", "tpu")],
            _one([8, 8], [], 0),
            id="pool-without-accelerator-count-left-out",
        ),
        pytest.param(
            _cluster(_pool()),
            [_replica("a-0"), _replica("a-0", fp=_tp(4), ready=True)],
            _one([8, 4], ["ml/a-0"], 4),
            id="listed-twice-counts-once-ready-first",
        ),
    ],
)
def test_summarize(cluster: ClusterInfo, replicas: list[Listed], want: dict[str, Any]) -> None:
    assert _view(summarize(cluster, PER_NODE, replicas)) == want


def test_summary_keeps_the_pool_figures() -> None:
    pool = summarize(_cluster(_pool(nodes=3, in_use=5)), PER_NODE, []).pools["h100"]
    assert (pool.name, pool.class_name, pool.nodes, pool.per_node) == ("h100", "h100", 3, 8)
    assert pool.observed == Observed(Source.KAI, 5)


_listed = st.builds(
    _replica,
    name=st.sampled_from([f"r-{i}" for i in range(8)]),
    pool=st.sampled_from(["h100", "l4", "gone"]),
    fp=st.builds(_tp, st.sampled_from([1, 2, 4, 8]), pipeline=st.integers(1, 2), workers=st.integers(1, 3)),
    ready=st.booleans(),
    created=st.sampled_from(["", "2026-11-26T10:00:00Z", "2026-11-26T10:01:00Z"]),
    cluster=st.sampled_from(["c", "c", "o"]),
)
_fleet = st.tuples(st.integers(0, 4), st.sampled_from([None, 0, 6, 40]), st.lists(_listed, max_size=10))


def _fleet_cluster(nodes: int, in_use: int | None) -> ClusterInfo:
    return _cluster(_pool(nodes=nodes, in_use=in_use), _pool("l4", 2, class_name="l4"))


@given(_fleet, st.randoms(use_true_random=False))
def test_summary_does_not_depend_on_input_order(fleet: tuple[int, int | None, list[Listed]], rng: Any) -> None:
    nodes, in_use, replicas = fleet
    shuffled = list(replicas)
    rng.shuffle(shuffled)
    cluster = _fleet_cluster(nodes, in_use)
    assert summarize(cluster, PER_NODE, shuffled) == summarize(cluster, PER_NODE, replicas)


_unique_fleet = st.tuples(
    st.integers(0, 4),
    st.sampled_from([None, 0, 6, 40]),
    st.lists(_listed, max_size=10, unique_by=lambda r: r.occupancy.name),
)


@given(_unique_fleet)
def test_every_gpu_is_accounted_for_and_running_replicas_are_never_overcommitted(
    fleet: tuple[int, int | None, list[Listed]],
) -> None:
    nodes, in_use, replicas = fleet
    summary = summarize(_fleet_cluster(nodes, in_use), PER_NODE, replicas)
    counted = {key for p in summary.pools.values() for key in p.counted}
    assert not counted & set(summary.overcommitted)
    own = [r.occupancy for r in replicas if r.occupancy.cluster == "c"]
    assert not {f"ml/{h.name}" for h in own if h.ready} & set(summary.overcommitted)
    for pool in summary.pools.values():
        ready = sum(r.footprint.total_gpus for h in own if h.ready for r in h.roles if r.pool == pool.name)
        unexplained = max(0, pool.observed.in_use - ready) if pool.observed is not None else 0
        assert pool.nodes * pool.per_node - pool.node_free.free + pool.overflow == pool.held + unexplained
        assert pool.node_free.nodes == pool.nodes
