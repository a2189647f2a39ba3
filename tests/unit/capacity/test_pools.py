from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.capacity import (
    ClusterInfo,
    DeploymentKey,
    Listed,
    PoolInfo,
    PoolKey,
    PoolSummary,
    Source,
    cluster_info,
    replica_occupancy,
    summarize,
)
from modelplane.scheduling import fleet_view
from modelplane.scheduling.devices import class_view
from modelplane.topology import Role
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica
from tests.golden.cases import as_observed
from tests.unit.fleet import NAMESPACE, Pool, Shape, cluster, gpu_class, replica

EXAMPLES = Path(__file__).parents[3] / "examples" / "platform"
H100 = gpu_class("h100", per_node=8)
L4 = gpu_class("l4", per_node=1, arch="Ada")


def pool_capacities(
    clusters: list[InferenceCluster], classes: list[InferenceClass], replicas: list[ModelReplica]
) -> dict[PoolKey, PoolSummary]:
    """Each pool as its cluster summarizes it (``modelplane.capacity.summarize``), by (cluster, pool)."""
    per_node = {v.name: v.accelerator_per_node for v in map(class_view, classes) if v and v.accelerator_per_node}
    listed = [Listed(h) for h in map(replica_occupancy, replicas) if h is not None]
    out: dict[PoolKey, PoolSummary] = {}
    for info in sorted((i for i in map(cluster_info, clusters) if i is not None), key=lambda i: i.name):
        for name, pool in summarize(info, per_node, listed).pools.items():
            out[info.name, name] = pool
    return dict(sorted(out.items()))


def figures(cap: PoolSummary) -> dict[str, Any]:
    free_per_node = sorted(f for f, n in enumerate(cap.node_free.counts) for _ in range(n))
    return {
        "declared": cap.nodes * cap.per_node,
        "held": cap.held,
        "free": cap.node_free.free,
        "source": cap.observed.source if cap.observed is not None else Source.DECLARED,
        "overcommitted": cap.overflow,
        "nodes": free_per_node,
    }


def unified(
    name: str, cluster_name: str, pool: str, shape: Shape, dep: str | None = None, *, ready: bool = False
) -> ModelReplica:
    return replica(
        name,
        cluster=cluster_name,
        pools={Role.UNIFIED: pool},
        shapes={Role.UNIFIED: shape},
        deployment=dep,
        ready=ready,
    )


@pytest.mark.parametrize(
    ("clusters", "replicas", "want"),
    [
        pytest.param(
            [cluster("a", Pool("h100", "h100", 2))],
            [],
            {"declared": 16, "held": 0, "free": 16, "source": Source.DECLARED, "overcommitted": 0, "nodes": [8, 8]},
            id="declared",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 1, max_nodes=3))],
            [],
            {"declared": 24, "held": 0, "free": 24, "source": Source.DECLARED, "overcommitted": 0, "nodes": [8] * 3},
            id="max-node-count-counts",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 2))],
            [unified("r1", "a", "h100", Shape(tensor=4)), unified("r2", "a", "h100", Shape(tensor=4))],
            {"declared": 16, "held": 8, "free": 8, "source": Source.DECLARED, "overcommitted": 0, "nodes": [0, 8]},
            id="two-tp4-share-one-node",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 3))],
            [unified("r1", "a", "h100", Shape(tensor=8, pipeline=2))],
            {"declared": 24, "held": 16, "free": 8, "source": Source.DECLARED, "overcommitted": 0, "nodes": [0, 0, 8]},
            id="multi-node-worker-holds-two-nodes",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 1))],
            [unified("r1", "a", "h100", Shape(tensor=8)), unified("r2", "a", "h100", Shape(tensor=2))],
            # r2, the newer and not Ready, does not fit: it holds nothing (its cluster lists it to be moved).
            {"declared": 8, "held": 8, "free": 0, "source": Source.DECLARED, "overcommitted": 0, "nodes": [0]},
            id="the-newer-beyond-capacity-holds-nothing",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 1))],
            [
                unified("r1", "a", "h100", Shape(tensor=8), ready=True),
                unified("r2", "a", "h100", Shape(tensor=2), ready=True),
            ],
            {"declared": 8, "held": 10, "free": 0, "source": Source.DECLARED, "overcommitted": 2, "nodes": [0]},
            id="ready-replicas-beyond-capacity-overcommit",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 4), observed={"h100": ("KAI", 12)})],
            [],
            {"declared": 32, "held": 0, "free": 20, "source": Source.KAI, "overcommitted": 0, "nodes": [0, 4, 8, 8]},
            id="observed-kai",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 4), observed={"h100": ("Kueue", 12)})],
            [unified("r1", "a", "h100", Shape(tensor=8), ready=True)],
            {"declared": 32, "held": 8, "free": 20, "source": Source.KUEUE, "overcommitted": 0, "nodes": [0, 4, 8, 8]},
            id="observed-explained-by-a-ready-replica",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 4), observed={"h100": ("Kueue", 12)})],
            [unified("r1", "a", "h100", Shape(tensor=8))],
            {"declared": 32, "held": 8, "free": 12, "source": Source.KUEUE, "overcommitted": 0, "nodes": [0, 0, 4, 8]},
            id="replica-not-ready-yet-counted-on-top",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 2), observed={"h100": ("Kueue", 4)})],
            [unified("r1", "a", "h100", Shape(tensor=8), ready=True)],
            {"declared": 16, "held": 8, "free": 8, "source": Source.KUEUE, "overcommitted": 0, "nodes": [0, 8]},
            id="observed-lagging-behind-replicas",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 2), observed={"h100": ("Declared", 16)})],
            [],
            {"declared": 16, "held": 0, "free": 16, "source": Source.DECLARED, "overcommitted": 0, "nodes": [8, 8]},
            id="declared-figure-is-not-observed",
        ),
        pytest.param(
            [cluster("a", Pool("h100", "h100", 2)), cluster("b", Pool("h100", "h100", 2))],
            [unified("r1", "b", "h100", Shape(tensor=8)), unified("r2", "a", "l4", Shape())],
            {"declared": 16, "held": 0, "free": 16, "source": Source.DECLARED, "overcommitted": 0, "nodes": [8, 8]},
            id="other-clusters-and-pools-do-not-count",
        ),
    ],
)
def test_pool_capacity(clusters: list[InferenceCluster], replicas: list[ModelReplica], want: dict[str, Any]) -> None:
    got = pool_capacities(clusters, [H100, L4], replicas)
    assert figures(got["a", "h100"]) == want


def test_workers_the_rebuilt_packing_cannot_fit_still_fill_the_pool() -> None:
    # Two 2-node workers and two TP2 workers fill a pool of two 4-GPU nodes exactly. Rebuilt larger
    # shapes first, the TP2s share one node and the 2-node workers no longer fit: what they hold must
    # still come off the other node, or a later replica would be placed on a full pool.
    four = gpu_class("h100", per_node=4)
    replicas = [unified(f"pp-{i}", "a", "h100", Shape(tensor=1, pipeline=2)) for i in range(2)]
    replicas += [unified(f"tp-{i}", "a", "h100", Shape(tensor=2)) for i in range(2)]
    got = pool_capacities([cluster("a", Pool("h100", "h100", 2))], [four], replicas)
    assert (got["a", "h100"].node_free.free, got["a", "h100"].overflow) == (0, 0)


def test_stale_observed_figure_is_ignored() -> None:
    stale = cluster("a", Pool("h100", "h100", 2), observed={"h100": ("KAI", 16)})
    assert stale.status is not None and stale.status.capacity is not None and stale.status.capacity.pools
    stale.status.capacity.pools[0].className = "old-class"
    assert pool_capacities([stale], [H100], [])["a", "h100"].node_free.free == 16


def _free_for_mine(clusters: list[InferenceCluster], replicas: list[ModelReplica]) -> list[int]:
    """The free GPUs per node a deployment "mine" places against afresh, its own replicas given back."""
    view = fleet_view(clusters, [H100], replicas)
    own = [h for h in map(replica_occupancy, replicas) if h is not None and h.deployment == MINE]
    free = view.free_for(MINE, own)["a", "h100"]
    return sorted(f for f, n in enumerate(free.counts) for _ in range(n))


MINE = DeploymentKey(NAMESPACE, "mine")


def test_a_deployment_gets_its_own_replicas_back() -> None:
    replicas = [
        unified("mine-0", "a", "h100", Shape(tensor=8), dep="mine"),
        unified("theirs-0", "a", "h100", Shape(tensor=4), dep="theirs"),
    ]
    assert _free_for_mine([cluster("a", Pool("h100", "h100", 2))], replicas) == [4, 8]


def test_its_ready_replicas_still_explain_observed_usage() -> None:
    replicas = [unified("mine-0", "a", "h100", Shape(tensor=8), dep="mine", ready=True)]
    clusters = [cluster("a", Pool("h100", "h100", 2), observed={"h100": ("KAI", 8)})]
    assert _free_for_mine(clusters, replicas) == [8, 8]


def test_disaggregated_replica_holds_on_both_pools() -> None:
    r = replica(
        "pd-0",
        cluster="a",
        pools={Role.PREFILL: "l4", Role.DECODE: "h100"},
        shapes={Role.PREFILL: Shape(count=3), Role.DECODE: Shape(tensor=2, count=3)},
    )
    got = pool_capacities([cluster("a", Pool("h100", "h100", 1), Pool("l4", "l4", 4))], [H100, L4], [r])
    assert (got["a", "l4"].node_free.free, got["a", "h100"].node_free.free) == (1, 2)


@pytest.mark.parametrize(
    ("classes", "want"),
    [
        pytest.param([], [], id="class-missing"),
        pytest.param(
            [
                InferenceClass.model_validate(
                    {
                        "metadata": {"name": "h100"},
                        "spec": {"devices": [{"name": "ib", "driver": "ib.x", "claim": "Synthetic", "count": 1}]},
                    }
                )
            ],
            [],
            id="class-without-accelerator",
        ),
        pytest.param([H100], [("a", "h100")], id="class-present"),
    ],
)
def test_pools_without_a_known_accelerator_are_left_out(
    classes: list[InferenceClass], want: list[tuple[str, str]]
) -> None:
    assert list(pool_capacities([cluster("a", Pool("h100", "h100", 2))], classes, [])) == want


def test_replica_occupancy() -> None:
    r = unified("r", "a", "h100", Shape(tensor=4, data=2, data_local=2, count=3), dep="llm")
    occupancy = replica_occupancy(r)
    assert occupancy is not None
    assert (occupancy.namespace, occupancy.name, occupancy.cluster) == (NAMESPACE, "r", "a")
    assert occupancy.deployment == DeploymentKey(NAMESPACE, "llm")
    assert [(h.role, h.pool, h.footprint.gpus_per_node, h.footprint.workers) for h in occupancy.roles] == [
        (Role.UNIFIED, "h100", 8, 3)
    ]


def test_replica_occupancy_counts_a_bad_topology_rounded_up() -> None:
    r = unified("r", "a", "h100", Shape(tensor=1, data=3, data_local=2))
    occupancy = replica_occupancy(r)
    assert occupancy is not None
    assert occupancy.roles[0].footprint.nodes_per_worker == 2


def test_cluster_info() -> None:
    info = cluster_info(cluster("a", Pool("h100", "h100", 1, max_nodes=4), labels={"tier": "prod"}, ready=False))
    assert info == ClusterInfo(
        name="a",
        labels={"tier": "prod"},
        cordoned=False,
        ready=False,
        not_ready="Ready is False (Creating)",
        pools=(PoolInfo("h100", "h100", 4),),
    )
    without_status = cluster_info(cluster("b", ready=None))
    assert without_status is not None
    assert (without_status.ready, without_status.not_ready) == (False, "no Ready condition yet")


def _load(kind: str, directory: Path) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(directory.rglob("*.yaml")):
        docs += [as_observed(d) for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == kind]
    return docs


def test_example_fleet() -> None:
    clusters = [InferenceCluster.model_validate(d) for d in _load("InferenceCluster", EXAMPLES)]
    classes = [InferenceClass.model_validate(d) for d in _load("InferenceClass", EXAMPLES)]
    got = {
        key: (f["declared"], f["free"], f["source"])
        for key, cap in pool_capacities(clusters, classes, []).items()
        if (f := figures(cap))
    }
    assert got == {
        ("aks-westeurope", "h100"): (16, 16, Source.DECLARED),
        ("eks-us-west-2", "h100"): (16, 16, Source.DECLARED),
        ("eu-west-kueue", "h100"): (16, 16, Source.KUEUE),
        ("gke-us-central1", "h200"): (16, 16, Source.DECLARED),
        ("gke-us-central1", "l4"): (8, 8, Source.DECLARED),
        ("us-east-kai", "h100"): (32, 20, Source.KAI),
    }


shapes = st.builds(
    Shape,
    tensor=st.sampled_from([1, 2, 4, 8]),
    pipeline=st.integers(1, 2),
    count=st.integers(1, 3),
)
fleet_replicas = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(["h100", "l4"]),
        shapes,
        st.sampled_from(["x", "y", None]),
        st.booleans(),
    ),
    max_size=12,
)
Spec = tuple[str, str, Shape, str | None, bool]


def _fleet(specs: list[Spec], used: int) -> tuple[list[InferenceCluster], list[ModelReplica]]:
    clusters = [
        cluster("a", Pool("h100", "h100", 3), Pool("l4", "l4", 4), observed={"h100": ("KAI", used)}),
        cluster("b", Pool("h100", "h100", 2)),
    ]
    replicas = [unified(f"r{i}", c, p, s, dep, ready=ready) for i, (c, p, s, dep, ready) in enumerate(specs)]
    return clusters, replicas


@settings(max_examples=60, deadline=None)
@given(fleet_replicas, st.integers(0, 40), st.randoms(use_true_random=False))
def test_capacity_is_conserved_and_order_free(specs: list[Spec], used: int, rng: Any) -> None:
    clusters, replicas = _fleet(specs, used)
    got = pool_capacities(clusters, [H100, L4], replicas)
    shuffled = list(replicas)
    rng.shuffle(shuffled)
    assert pool_capacities(list(reversed(clusters)), [L4, H100], shuffled) == got
    for (c, p), cap in got.items():
        on_pool = [h for h in map(replica_occupancy, replicas) if h is not None and h.cluster == c]
        explained = sum(r.footprint.total_gpus for h in on_pool if h.ready for r in h.roles if r.pool == p)
        counted = sum(
            r.footprint.total_gpus
            for h in on_pool
            if f"{h.namespace}/{h.name}" in cap.counted
            for r in h.roles
            if r.pool == p
        )
        unexplained = max(0, cap.observed.in_use - explained) if cap.observed is not None else 0
        declared = cap.nodes * cap.per_node
        assert cap.held == counted
        assert cap.node_free.free + counted + unexplained - cap.overflow == declared
        assert 0 <= cap.node_free.free <= declared
        # Only a replica that is not Ready is ever left uncounted (beyond capacity, to be moved).
        assert all(
            h.ready is False
            for h in on_pool
            if f"{h.namespace}/{h.name}" not in cap.counted and any(r.pool == p for r in h.roles)
        )
