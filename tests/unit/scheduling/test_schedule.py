from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from modelplane.scheduling import (
    InvalidDeploymentError,
    Origin,
    PoolReason,
    RejectReason,
    Schedule,
)
from modelplane.topology import Role
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica
from tests.unit.fleet import (
    IB,
    Pool,
    Shape,
    cluster,
    deployment,
    gpu_class,
    plan,
    replica,
    replicas_of,
)

H100 = gpu_class("h100", per_node=8, ib=8)
H200 = gpu_class("h200", per_node=8, memory="141Gi")
L4 = gpu_class("l4", per_node=1, arch="Ada", memory="24Gi")
CLASSES = [H100, H200, L4]
MEM_140 = "mem >= 140Gi"


def placed(result: Schedule) -> dict[str, tuple[str, ...]]:
    """replica -> (cluster, pool per role...)"""
    return {p.replica: (p.cluster, *(r.pool for r in p.roles)) for p in result.placements}


def unplaced(result: Schedule) -> dict[str, RejectReason]:
    return {u.replica: u.reason for u in result.unplaced}


def run(dep: ModelDeployment, clusters: list[InferenceCluster], replicas: list[ModelReplica] | None = None) -> Schedule:
    return plan(dep, clusters, CLASSES, replicas or [])


@dataclass(frozen=True)
class Case:
    deployment: ModelDeployment
    clusters: list[InferenceCluster]
    replicas: list[ModelReplica] = field(default_factory=list)
    placed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unplaced: dict[str, RejectReason] = field(default_factory=dict)


CASES = [
    pytest.param(
        Case(
            deployment("small", shape=Shape(cel="true")),
            [cluster("a", Pool("l4", "l4", 1))],
            placed={"small-0": ("a", "l4")},
        ),
        id="single-gpu",
    ),
    pytest.param(
        Case(
            deployment("llama", replicas=2, shape=Shape(tensor=4)),
            [cluster("a", Pool("h100", "h100", 1))],
            placed={"llama-0": ("a", "h100"), "llama-1": ("a", "h100")},
        ),
        id="tp4-two-replicas-share-a-node",
    ),
    pytest.param(
        Case(
            deployment("llama", replicas=3, shape=Shape(tensor=4)),
            [cluster("a", Pool("h100", "h100", 1))],
            placed={"llama-0": ("a", "h100"), "llama-1": ("a", "h100")},
            unplaced={"llama-2": RejectReason.INSUFFICIENT_CAPACITY},
        ),
        id="insufficient-capacity-partial",
    ),
    pytest.param(
        Case(
            deployment("kimi", shape=Shape(tensor=8, pipeline=2, devices=(("ib", IB, 1),))),
            [cluster("a", Pool("h100", "h100", 1)), cluster("b", Pool("h100", "h100", 2))],
            placed={"kimi-0": ("b", "h100")},
        ),
        id="tp8-pp2-needs-two-nodes",
    ),
    pytest.param(
        Case(
            deployment("kimi", shape=Shape(tensor=8, devices=(("ib", IB, 1),))),
            [cluster("a", Pool("h200", "h200", 4)), cluster("b", Pool("h100", "h100", 1))],
            placed={"kimi-0": ("b", "h100")},
        ),
        id="synthetic-ib-requirement-filters-pools",
    ),
    pytest.param(
        Case(
            deployment("pd", prefill=Shape(count=5), decode=Shape(tensor=2, count=3, cel=MEM_140)),
            [cluster("a", Pool("h100", "h100", 1), Pool("h200", "h200", 1))],
            placed={"pd-0": ("a", "h100", "h200")},
        ),
        id="5p3d-one-cluster-different-pools",
    ),
    pytest.param(
        Case(
            deployment(
                "pd", prefill=Shape(count=5, devices=(("ib", IB, 1),)), decode=Shape(tensor=2, count=3, cel=MEM_140)
            ),
            [cluster("a", Pool("h100", "h100", 4)), cluster("b", Pool("h200", "h200", 4))],
            unplaced={"pd-0": RejectReason.NO_MATCHING_POOLS},
        ),
        id="roles-never-split-across-clusters",
    ),
    pytest.param(
        Case(
            deployment("pd", prefill=Shape(count=4), decode=Shape(tensor=2, count=2, cel=MEM_140)),
            [cluster("a", Pool("h200", "h200", 1))],
            placed={"pd-0": ("a", "h200", "h200")},
        ),
        id="prefill-and-decode-share-a-pool",
    ),
    pytest.param(
        Case(
            deployment("pd", prefill=Shape(count=5), decode=Shape(tensor=2, count=2, cel=MEM_140)),
            [cluster("a", Pool("h200", "h200", 1))],
            unplaced={"pd-0": RejectReason.INSUFFICIENT_CAPACITY},
        ),
        id="shared-pool-counted-jointly",
    ),
    pytest.param(
        Case(
            deployment("llama", match_labels={"tier": "prod"}),
            [cluster("a", Pool("h100", "h100", 1), labels={"tier": "dev"})],
            unplaced={"llama-0": RejectReason.NO_MATCHING_CLUSTERS},
        ),
        id="no-matching-cluster",
    ),
    pytest.param(
        Case(
            deployment("llama"),
            [cluster("a", Pool("h100", "h100", 1), cordoned=True), cluster("b", Pool("h100", "h100", 1))],
            placed={"llama-0": ("b", "h100")},
        ),
        id="cordoned-skipped",
    ),
    pytest.param(
        Case(
            deployment("llama"),
            [cluster("a", Pool("h100", "h100", 1), cordoned=True)],
            unplaced={"llama-0": RejectReason.NO_MATCHING_CLUSTERS},
        ),
        id="only-cordoned",
    ),
    pytest.param(
        Case(
            deployment("llama"),
            [
                cluster("a", Pool("h100", "h100", 1), ready=False),
                cluster("b", Pool("h100", "h100", 1), ready=None),
                cluster("c", Pool("h100", "h100", 1)),
            ],
            placed={"llama-0": ("c", "h100")},
        ),
        id="not-ready-and-no-status-skipped",
    ),
    pytest.param(
        Case(
            deployment("llama", shape=Shape(cel="boom")),
            [cluster("a", Pool("h100", "h100", 1))],
            unplaced={"llama-0": RejectReason.CEL_ERROR},
        ),
        id="cel-error",
    ),
    pytest.param(
        Case(
            deployment("llama", shape=Shape(tensor=16)),
            [cluster("a", Pool("h100", "h100", 4))],
            unplaced={"llama-0": RejectReason.NO_MATCHING_POOLS},
        ),
        id="topology-exceeds-every-node",
    ),
    pytest.param(
        Case(
            deployment("llama", replicas=3, shape=Shape(tensor=4)),
            [cluster("a", Pool("h100", "h100", 4)), cluster("b", Pool("h100", "h100", 4))],
            placed={"llama-0": ("a", "h100"), "llama-1": ("b", "h100"), "llama-2": ("a", "h100")},
        ),
        id="spread-across-clusters-first",
    ),
    pytest.param(
        Case(
            deployment("llama", shape=Shape(tensor=4)),
            [cluster("a", Pool("h100", "h100", 2)), cluster("b", Pool("h100", "h100", 2))],
            replicas=[
                replica("other-0", cluster="b", pools={Role.UNIFIED: "h100"}, shapes={Role.UNIFIED: Shape(tensor=4)})
            ],
            placed={"llama-0": ("b", "h100")},
        ),
        id="best-fit-fills-a-used-node",
    ),
    pytest.param(
        Case(
            deployment("llama", shape=Shape(tensor=8)),
            [cluster("a", Pool("h100", "h100", 1)), cluster("b", Pool("h100", "h100", 1))],
            replicas=[
                replica("other-0", cluster="a", pools={Role.UNIFIED: "h100"}, shapes={Role.UNIFIED: Shape(tensor=2)})
            ],
            placed={"llama-0": ("b", "h100")},
        ),
        id="other-deployments-hold-gpus",
    ),
    pytest.param(
        Case(
            deployment("llama", shape=Shape(tensor=8)),
            [cluster("a", Pool("h100", "h100", 2), observed={"h100": ("KAI", 12)})],
            unplaced={"llama-0": RejectReason.INSUFFICIENT_CAPACITY},
        ),
        id="observed-usage-fragments-nodes",
    ),
    pytest.param(
        Case(
            deployment("llama", replicas=2),
            [cluster("a", Pool("h100", "h100", 1)), cluster("b", Pool("l4", "l4", 1))],
            placed={"llama-0": ("a", "h100"), "llama-1": ("a", "h100")},
        ),
        id="spread-only-among-fitting-clusters",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_schedule(case: Case) -> None:
    got = run(case.deployment, case.clusters, case.replicas)
    assert placed(got) == case.placed
    assert unplaced(got) == case.unplaced
    assert got.desired == len(case.placed) + len(case.unplaced)


def test_message_counts_and_names_reasons() -> None:
    dep = deployment("llama", replicas=3, shape=Shape(tensor=4), match_labels={"tier": "prod"})
    clusters = [
        cluster("a", Pool("h100", "h100", 1), labels={"tier": "prod"}),
        cluster("b", Pool("h100", "h100", 1), labels={"tier": "prod"}, cordoned=True),
        cluster("c", Pool("l4", "l4", 2), labels={"tier": "prod"}),
        cluster("d", Pool("h100", "h100", 8), labels={"tier": "dev"}),
    ]
    got = run(dep, clusters)
    assert (got.placed, got.complete, got.reason) == (2, False, RejectReason.INSUFFICIENT_CAPACITY)
    assert got.message == (
        "placed 2 of 3: llama-2: InsufficientCapacity: 3 of 4 clusters match clusterSelector:"
        " 1 InsufficientCapacity (a: pool h100: needs 1 worker of 1 node x 4 GPUs;"
        " 0 of 8 GPUs free, 0 nodes with 4 free),"
        " 1 NoMatchingPools (c: pool l4: spec.nodeSelector.cel matches no DRA device of l4),"
        " 1 Cordoned (b: cordoned)"
    )
    rejections = {r.cluster: r.reason for r in got.unplaced[0].rejections}
    assert rejections == {
        "a": RejectReason.INSUFFICIENT_CAPACITY,
        "b": RejectReason.CORDONED,
        "c": RejectReason.NO_MATCHING_POOLS,
    }


def test_cel_error_names_the_expression() -> None:
    got = run(deployment("llama", shape=Shape(cel="true && boom")), [cluster("a", Pool("h100", "h100", 1))])
    (rejection,) = got.unplaced[0].rejections
    assert rejection.reason is RejectReason.CEL_ERROR
    assert rejection.pools[0].reason is PoolReason.CEL_ERROR
    assert "spec.nodeSelector.cel: no such key: boom (in 'true && boom')" in got.message


def test_not_ready_says_why() -> None:
    got = run(deployment("llama"), [cluster("a", Pool("h100", "h100", 1), ready=False)])
    assert got.message == (
        "placed 0 of 1: llama-0: NoMatchingClusters: 1 of 1 clusters match clusterSelector:"
        " 1 NotReady (a: Ready is False (Creating))"
    )


def test_disaggregated_rejection_names_the_role() -> None:
    dep = deployment("pd", prefill=Shape(count=5), decode=Shape(tensor=2, count=3, cel=MEM_140))
    got = run(dep, [cluster("a", Pool("h100", "h100", 4))])
    assert "a: decode pool h100: spec.decode.nodeSelector.cel matches no DRA device of h100" in got.message


def test_sticky_after_a_better_cluster_appears() -> None:
    dep = deployment("llama", replicas=2, shape=Shape(tensor=4))
    first = run(dep, [cluster("a", Pool("h100", "h100", 1))])
    assert placed(first) == {"llama-0": ("a", "h100"), "llama-1": ("a", "h100")}
    # A new, empty cluster would win both spread and best fit for a new replica.
    bigger = [cluster("a", Pool("h100", "h100", 1)), cluster("b", Pool("h100", "h100", 8))]
    again = run(dep, bigger, replicas_of(first, dep))
    assert placed(again) == placed(first)
    assert {p.origin for p in again.placements} == {Origin.KEPT}


def test_sticky_on_cordoned_and_not_ready_clusters() -> None:
    dep = deployment("llama", replicas=2, shape=Shape(tensor=8))
    fleet = [cluster("a", Pool("h100", "h100", 1)), cluster("b", Pool("h100", "h100", 1))]
    first = run(dep, fleet)
    drained = [
        cluster("a", Pool("h100", "h100", 1), cordoned=True),
        cluster("b", Pool("h100", "h100", 1), ready=False),
        cluster("c", Pool("h100", "h100", 4)),
    ]
    again = run(dep, drained, replicas_of(first, dep))
    assert placed(again) == placed(first) == {"llama-0": ("a", "h100"), "llama-1": ("b", "h100")}


def test_a_ready_replica_is_sticky_even_when_its_pool_is_overcommitted() -> None:
    dep = deployment("llama", shape=Shape(tensor=8))
    first = run(dep, [cluster("a", Pool("h100", "h100", 1))])
    other = replica("other-0", cluster="a", pools={Role.UNIFIED: "h100"}, shapes={Role.UNIFIED: Shape(tensor=8)})
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    mine = [
        ModelReplica.model_validate({**r.model_dump(exclude_none=True), "status": ready})
        for r in replicas_of(first, dep)
    ]
    again = run(dep, [cluster("a", Pool("h100", "h100", 1))], [*mine, other])
    assert placed(again) == {"llama-0": ("a", "h100")}


def test_the_newer_replica_not_serving_yields_an_overcommitted_pool() -> None:
    # Placed concurrently with an older replica into the same node: its cluster lists it overcommitted,
    # and with nowhere else to go it is withdrawn (unplaced), never left holding what the other runs on.
    dep = deployment("llama", shape=Shape(tensor=8))
    first = run(dep, [cluster("a", Pool("h100", "h100", 1))])
    other = replica("other-0", cluster="a", pools={Role.UNIFIED: "h100"}, shapes={Role.UNIFIED: Shape(tensor=8)})
    again = run(dep, [cluster("a", Pool("h100", "h100", 1))], [*replicas_of(first, dep), other])
    assert placed(again) == {}
    assert again.removed == ("llama-0",)
    assert [u.reason for u in again.unplaced] == [RejectReason.INSUFFICIENT_CAPACITY]
    assert "a: it has no room for this replica: replicas placed there concurrently took it" in again.unplaced[0].message


def test_scale_three_to_one_to_three() -> None:
    fleet = [cluster(c, Pool("h100", "h100", 1)) for c in ("a", "b", "c")]
    three = deployment("llama", replicas=3, shape=Shape(tensor=8))
    first = run(three, fleet)
    assert placed(first) == {"llama-0": ("a", "h100"), "llama-1": ("b", "h100"), "llama-2": ("c", "h100")}

    one = deployment("llama", replicas=1, shape=Shape(tensor=8))
    down = run(one, fleet, replicas_of(first, three))
    assert placed(down) == {"llama-0": ("a", "h100")}
    assert down.removed == ("llama-2", "llama-1")

    # Crossplane deleted the removed replicas; scaling up reuses the lowest free ordinals.
    up = run(three, fleet, replicas_of(down, one))
    assert placed(up) == placed(first)
    assert [p.origin for p in up.placements] == [Origin.KEPT, Origin.NEW, Origin.NEW]


def test_scale_down_removes_unschedulable_clusters_first() -> None:
    fleet = [cluster(c, Pool("h100", "h100", 1)) for c in ("a", "b", "c")]
    three = deployment("llama", replicas=3, shape=Shape(tensor=8))
    first = run(three, fleet)
    drained = [
        cluster("a", Pool("h100", "h100", 1), cordoned=True),
        cluster("b", Pool("h100", "h100", 1)),
        cluster("c", Pool("h100", "h100", 1)),
    ]
    down = run(deployment("llama", replicas=2, shape=Shape(tensor=8)), drained, replicas_of(first, three))
    assert down.removed == ("llama-0",)
    assert placed(down) == {"llama-1": ("b", "h100"), "llama-2": ("c", "h100")}


def test_scale_down_removes_replicas_that_are_not_serving_first() -> None:
    fleet = [cluster(c, Pool("h100", "h100", 1)) for c in ("a", "b", "c")]
    three = deployment("llama", replicas=3, shape=Shape(tensor=8))
    existing = []
    for r in replicas_of(run(three, fleet), three):
        body = r.model_dump(exclude_none=True, by_alias=True)
        if r.metadata is not None and r.metadata.name != "llama-0":  # llama-0 is still starting
            body["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
        existing.append(type(r).model_validate(body))
    down = run(deployment("llama", replicas=1, shape=Shape(tensor=8)), fleet, existing)
    assert down.removed == ("llama-0", "llama-2")
    assert placed(down) == {"llama-1": ("b", "h100")}


def test_scale_to_zero() -> None:
    fleet = [cluster("a", Pool("h100", "h100", 1))]
    two = deployment("llama", replicas=2, shape=Shape(tensor=4))
    got = run(deployment("llama", replicas=0, shape=Shape(tensor=4)), fleet, replicas_of(run(two, fleet), two))
    assert (got.placements, got.unplaced, got.removed) == ((), (), ("llama-1", "llama-0"))
    assert got.message == "placed 0 of 0"


def test_unmanaged_replicas_hold_gpus_but_are_left_alone() -> None:
    hand_made = replica(
        "llama-canary",
        cluster="a",
        pools={Role.UNIFIED: "h100"},
        shapes={Role.UNIFIED: Shape(tensor=8)},
        deployment="llama",
    )
    fleet = [cluster("a", Pool("h100", "h100", 1)), cluster("b", Pool("h100", "h100", 1))]
    got = run(deployment("llama", shape=Shape(tensor=8)), fleet, [hand_made])
    assert placed(got) == {"llama-0": ("b", "h100")}
    assert got.unmanaged == ("llama-canary",)


def test_other_namespaces_are_other_deployments() -> None:
    elsewhere = replica(
        "llama-0",
        cluster="a",
        pools={Role.UNIFIED: "h100"},
        shapes={Role.UNIFIED: Shape(tensor=8)},
        deployment="llama",
        namespace="other-team",
    )
    fleet = [cluster("a", Pool("h100", "h100", 1)), cluster("b", Pool("h100", "h100", 1))]
    got = run(deployment("llama", shape=Shape(tensor=8)), fleet, [elsewhere])
    assert placed(got) == {"llama-0": ("b", "h100")}
    assert got.placements[0].origin is Origin.NEW


def test_footprints_are_reported_per_role() -> None:
    dep = deployment("pd", prefill=Shape(count=5), decode=Shape(tensor=2, count=3, cel=MEM_140))
    got = run(dep, [cluster("a", Pool("h100", "h100", 1), Pool("h200", "h200", 1))])
    ((_, prefill), (_, decode)) = ((r.role, r.footprint) for r in got.placements[0].roles)
    assert (prefill.total_gpus, decode.total_gpus) == (5, 6)
    assert got.placements[0].pool(Role.DECODE) == "h200"
    assert got.placements[0].pool(Role.UNIFIED) is None


@pytest.mark.parametrize(
    ("dep", "field"),
    [
        pytest.param(deployment(shape=Shape(data=3, data_local=2)), "spec.workers.topology.data", id="topology"),
        pytest.param(
            ModelDeployment.model_validate({"metadata": {"name": "x", "namespace": "ml"}, "spec": {}}),
            "spec",
            id="no-shape",
        ),
        pytest.param(ModelDeployment.model_validate({"metadata": {"name": "x"}}), "spec", id="no-spec"),
        pytest.param(ModelDeployment.model_validate({}), "metadata.name", id="no-name"),
    ],
)
def test_invalid_deployment(dep: ModelDeployment, field: str) -> None:
    with pytest.raises(InvalidDeploymentError) as caught:
        run(dep, [cluster("a", Pool("h100", "h100", 1))])
    assert caught.value.problem.field == field


def test_missing_class_rejects_its_pools() -> None:
    got = plan(deployment("llama"), [cluster("a", Pool("h100", "h100", 1))], [])
    assert got.unplaced[0].reason is RejectReason.NO_MATCHING_POOLS
    assert got.unplaced[0].rejections[0].pools[0].reason is PoolReason.CLASS_NOT_FOUND


def test_a_kept_placement_outside_the_new_cluster_selector_is_stale_not_moved() -> None:
    fleet = [cluster("a", Pool("h100", "h100", 1), labels={"tier": "prod"})]
    original = deployment("llama", shape=Shape(tensor=8), match_labels={"tier": "prod"})
    changed = deployment("llama", shape=Shape(tensor=8), match_labels={"tier": "dev"})
    got = run(changed, fleet, replicas_of(run(original, fleet), original))
    assert placed(got) == {"llama-0": ("a", "h100")}
    assert got.placements[0].origin is Origin.KEPT
    assert got.placements[0].held is None
    assert got.placements[0].stale == "the cluster no longer matches clusterSelector"


def test_scale_down_removes_stale_replicas_first() -> None:
    fleet = [cluster(c, Pool("h100", "h100", 1), labels={"tier": c}) for c in ("a", "b")]
    two = deployment("llama", replicas=2, shape=Shape(tensor=8))
    first = run(two, fleet)
    got = run(
        deployment("llama", replicas=1, shape=Shape(tensor=8), match_labels={"tier": "b"}),
        fleet,
        replicas_of(first, two),
    )
    assert got.removed == ("llama-0",)
    assert placed(got) == {"llama-1": ("b", "h100")}
    assert got.placements[0].stale == ""


def test_message_groups_replicas_that_fail_alike() -> None:
    got = run(deployment("llama", replicas=4, shape=Shape(tensor=4)), [cluster("a", Pool("h100", "h100", 1))])
    assert got.message.startswith("placed 2 of 4: llama-2, llama-3: InsufficientCapacity: 1 of 1 clusters match")
    assert [u.ordinal for u in got.unplaced] == [2, 3]


def test_message_shows_two_clusters_per_reason_and_counts_the_rest() -> None:
    fleet = [cluster(f"c{i}", Pool("l4", "l4", 1)) for i in range(4)]
    got = run(deployment("llama"), fleet)
    assert got.unplaced[0].message == (
        "4 of 4 clusters match clusterSelector: 4 NoMatchingPools"
        " (c0: pool l4: spec.nodeSelector.cel matches no DRA device of l4;"
        " c1: pool l4: spec.nodeSelector.cel matches no DRA device of l4; and 2 more)"
    )
    assert len(got.unplaced[0].rejections) == 4


def test_a_pool_with_too_few_nodes_for_a_worker_matches_no_pool() -> None:
    # Waiting never makes a two-node worker fit a one-node pool: that is a misfit, not a capacity shortage.
    got = run(deployment("kimi", shape=Shape(tensor=8, pipeline=2)), [cluster("small", Pool("h100", "h100", 1))])
    (unplaced,) = got.unplaced
    assert unplaced.reason is RejectReason.NO_MATCHING_POOLS
    (rejection,) = unplaced.rejections
    assert [(p.pool, p.reason) for p in rejection.pools] == [("h100", PoolReason.TOO_FEW_NODES)]
    assert rejection.message == "pool h100: needs 1 worker of 2 nodes x 8 GPUs; the pool has 1 node"
