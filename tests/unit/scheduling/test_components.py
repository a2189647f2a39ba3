"""A cluster that lacks a serving-stack component a replica needs (status.components) does not take that replica.

The scheduler reads what the cluster publishes: each component's mode, whether it is ready and
which replicas need it (All, MultiNode, PoolRouting). A replica that does not need the missing
component is placed as ever; one that does goes elsewhere, or stays unplaced with a shortfall
that names the component; a replica already running there is never moved for it.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.capacity import cluster_info
from modelplane.scheduling import RejectReason
from tests.unit.fleet import Pool, Shape, cluster, deployment, gpu_class, plan, replicas_of

H100 = gpu_class("h100", per_node=8)
SINGLE = Shape(tensor=8)
MULTI = Shape(tensor=8, pipeline=2)  # two nodes per worker: a LeaderWorkerSet group
POOL = {"mode": "Pool"}


def _missing(name: str, needed_by: str, *, mode: str = "Existing", why: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "mode": mode, "ready": False, "neededBy": needed_by}
    if why:
        entry["message"] = why
    return entry


KUEUE_MISSING = _missing("scheduler", "All", why="API kueue.x-k8s.io/v1beta2 not found")
LWS_MISSING = _missing("lws", "MultiNode", why="Deployment lws-system/lws-controller-manager not Available")
AI_GATEWAY_DISABLED = _missing("aiGateway", "PoolRouting", mode="Disabled")
READY_SCHEDULER = {"name": "scheduler", "mode": "Existing", "ready": True, "neededBy": "All"}
PROMETHEUS_OFF = _missing("prometheus", "None", mode="Disabled")


@pytest.mark.parametrize(
    ("components", "shape", "routing", "placed"),
    [
        pytest.param([], SINGLE, None, True, id="nothing-missing"),
        pytest.param([READY_SCHEDULER], SINGLE, None, True, id="existing-and-found"),
        pytest.param([KUEUE_MISSING], SINGLE, None, False, id="scheduler-missing-refuses-every-replica"),
        pytest.param([LWS_MISSING], SINGLE, None, True, id="lws-missing-single-node-placed"),
        pytest.param([LWS_MISSING], MULTI, None, False, id="lws-missing-multi-node-refused"),
        # Routing through a pool is the default.
        pytest.param([AI_GATEWAY_DISABLED], SINGLE, None, False, id="ai-gateway-disabled-default-routing-refused"),
        pytest.param([AI_GATEWAY_DISABLED], SINGLE, POOL, False, id="ai-gateway-disabled-pool-routing-refused"),
        pytest.param([AI_GATEWAY_DISABLED], SINGLE, {"mode": "Replica"}, True, id="ai-gateway-disabled-mode-replica"),
        pytest.param([PROMETHEUS_OFF], SINGLE, None, True, id="needed-by-none-is-never-refused"),
    ],
)
def test_a_replica_is_placed_only_where_its_components_are(
    components: list[dict[str, Any]], shape: Shape, routing: dict[str, str] | None, placed: bool
) -> None:
    dep = deployment("llm", shape=shape, routing=routing)
    got = plan(dep, [cluster("a", Pool("gpu", "h100", 2), components=components)], [H100], [])
    assert bool(got.placements) == placed
    if not placed:
        (unplaced,) = got.unplaced
        assert unplaced.reason == RejectReason.NO_MATCHING_CLUSTERS
        assert [r.reason for r in unplaced.rejections] == [RejectReason.COMPONENT_MISSING]


def test_the_shortfall_names_the_component_its_mode_and_what_is_missing() -> None:
    got = plan(
        deployment("llm", shape=MULTI),
        [cluster("a", Pool("gpu", "h100", 2), components=[KUEUE_MISSING, LWS_MISSING])],
        [H100],
        [],
    )
    (unplaced,) = got.unplaced
    assert unplaced.message == (
        "1 of 1 clusters match clusterSelector: 1 ComponentMissing (a: lacks lws (Existing: Deployment "
        "lws-system/lws-controller-manager not Available), which multi-node replicas need; lacks scheduler "
        "(Existing: API kueue.x-k8s.io/v1beta2 not found), which every replica needs)"
    )


def test_a_cluster_lacking_a_component_sends_the_replica_elsewhere() -> None:
    fleet = [
        cluster("a", Pool("gpu", "h100", 4), components=[KUEUE_MISSING]),
        cluster("b", Pool("gpu", "h100", 1)),
    ]
    got = plan(deployment("llm", replicas=2, shape=SINGLE), fleet, [H100], [])
    assert [p.cluster for p in got.placements] == ["b"]
    assert [u.reason for u in got.unplaced] == [RejectReason.INSUFFICIENT_CAPACITY]
    assert got.unplaced[0].message == (
        "2 of 2 clusters match clusterSelector: 1 InsufficientCapacity (b: pool gpu: needs 1 worker of 1 node x "
        "8 GPUs; 0 of 8 GPUs free, 0 nodes with 8 free), 1 ComponentMissing (a: lacks scheduler (Existing: API "
        "kueue.x-k8s.io/v1beta2 not found), which every replica needs)"
    )


def test_a_replica_running_on_the_cluster_stays_when_a_component_goes_missing() -> None:
    dep = deployment("llm", shape=SINGLE)
    first = plan(dep, [cluster("a", Pool("gpu", "h100", 1))], [H100], [])
    assert [p.cluster for p in first.placements] == ["a"]
    later = plan(
        dep, [cluster("a", Pool("gpu", "h100", 1), components=[KUEUE_MISSING])], [H100], replicas_of(first, dep)
    )
    assert [(p.replica, p.cluster) for p in later.placements] == [("llm-0", "a")]
    assert later.removed == ()
    assert later.unplaced == ()


def test_cordoned_says_cordoned_before_a_missing_component() -> None:
    fleet = [cluster("a", Pool("gpu", "h100", 1), cordoned=True, components=[KUEUE_MISSING])]
    (unplaced,) = plan(deployment("llm", shape=SINGLE), fleet, [H100], []).unplaced
    assert [r.reason for r in unplaced.rejections] == [RejectReason.CORDONED]


@pytest.mark.parametrize(
    ("entries", "want"),
    [
        pytest.param([], [], id="none"),
        pytest.param([READY_SCHEDULER], [], id="ready-is-not-lacking"),
        pytest.param([PROMETHEUS_OFF], [], id="needed-by-none-is-not-lacking"),
        pytest.param([{"name": "lws", "ready": False}], [], id="no-needed-by-is-not-lacking"),
        # Still installing: the cluster is not Ready until it is, which is what keeps replicas off then.
        pytest.param(
            [{"name": "lws", "mode": "Managed", "ready": False, "neededBy": "All"}], [], id="managed-installing"
        ),
        pytest.param([LWS_MISSING, KUEUE_MISSING], [("lws", "MultiNode"), ("scheduler", "All")], id="sorted"),
    ],
)
def test_the_cluster_reads_what_it_lacks(entries: list[dict[str, Any]], want: list[tuple[str, str]]) -> None:
    info = cluster_info(cluster("a", Pool("gpu", "h100", 1), components=entries))
    assert info is not None
    assert [(g.component, str(g.needed_by)) for g in info.lacking] == want
    assert info.schedulable  # lacking a component keeps replicas off, it does not make the cluster unschedulable
