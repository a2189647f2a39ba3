"""Invariants of the scheduler on random fleets (fake CEL: see tests.unit.fleet.fake_matcher)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.capacity import DeploymentKey, Occupancy, RoleOccupancy, cluster_info, replica_occupancy
from modelplane.capacity.summary import Listed, summarize
from modelplane.scheduling import Claim, DecidedBy, Decision, FleetView, Origin, Schedule
from modelplane.scheduling.devices import class_view
from modelplane.scheduling.explain import explain
from modelplane.scheduling.labels import label_selector
from modelplane.topology import Role
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica
from tests.unit.fleet import (
    HOPPER,
    IB,
    NAMESPACE,
    Pool,
    Shape,
    cluster,
    deployment,
    fake_matcher,
    gpu_class,
    plan,
    replica,
    replicas_of,
    view,
)

CLASSES = [
    gpu_class("h100", per_node=8, ib=8),
    gpu_class("h200", per_node=8, memory="141Gi"),
    gpu_class("a100", per_node=4, arch="Ampere"),
    gpu_class("l4", per_node=1, arch="Ada", memory="24Gi"),
]
CLASS_NAMES = [*(c.metadata.name for c in CLASSES if c.metadata and c.metadata.name), "ghost"]
SELECTORS = ["true", HOPPER, "mem >= 140Gi", 'device.attributes["gpu.nvidia.com"].architecture == "Ada"']


@dataclass(frozen=True)
class Fleet:
    deployment: ModelDeployment
    clusters: list[InferenceCluster]
    replicas: list[ModelReplica]
    draining: frozenset[str] = frozenset()
    deleting: frozenset[str] = frozenset()
    unreadable: dict[str, str] = field(default_factory=dict)

    def view(self) -> FleetView:
        """The fleet as the scheduler and explain read it."""
        return view(
            self.clusters,
            CLASSES,
            self.replicas,
            unreadable=self.unreadable,
            deleting=self.deleting,
            draining=self.draining,
        )


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    # Biased towards shapes that fit somewhere, so most examples place replicas.
    local = draw(st.sampled_from([1, 1, 1, 2]))
    cel = "boom" if draw(st.integers(0, 19)) == 0 else draw(st.sampled_from([*SELECTORS, "true", "true", HOPPER]))
    return Shape(
        tensor=draw(st.sampled_from([1, 1, 2, 4, 8])),
        pipeline=draw(st.sampled_from([1, 1, 1, 2])),
        data=local * draw(st.sampled_from([1, 1, 1, 2])),
        data_local=local,
        count=draw(st.integers(1, 3)),
        cel=cel,
        devices=(("ib", IB, 1),) if draw(st.integers(0, 5)) == 0 else (),
    )


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    clusters = []
    pools_of: dict[str, list[str]] = {}
    for i in range(draw(st.integers(1, 6))):
        name = f"c{i}"
        pools = [
            Pool(
                f"p{j}",
                draw(
                    st.sampled_from(CLASS_NAMES) if draw(st.integers(0, 9)) == 0 else st.sampled_from(CLASS_NAMES[:3])
                ),
                draw(st.integers(0, 6)),
                draw(st.none() | st.integers(6, 8)),
            )
            for j in range(draw(st.integers(0 if i else 1, 4)))
        ]
        pools_of[name] = [p.name for p in pools]
        observed = {p.name: ("KAI", draw(st.integers(0, 24))) for p in pools if draw(st.integers(0, 3)) == 0}
        clusters.append(
            cluster(
                name,
                *pools,
                labels={"tier": draw(st.sampled_from(["prod", "dev"]))},
                ready=draw(st.sampled_from([True] * 6 + [False, None])),
                cordoned=draw(st.integers(0, 7)) == 0,
                observed=observed,
            )
        )
    others = []
    for i in range(draw(st.integers(0, 10))):
        where = draw(st.sampled_from(sorted(pools_of)))
        pool = draw(st.sampled_from(pools_of[where] or ["p0"]))
        disaggregated = draw(st.booleans())
        roles = {Role.PREFILL: pool, Role.DECODE: pool} if disaggregated else {Role.UNIFIED: pool}
        others.append(
            replica(
                f"other{i}-0",
                cluster=where,
                pools=roles,
                shapes={r: draw(shapes()) for r in roles},
                deployment=f"other{i}",
            )
        )
    selector = {"tier": "prod"} if draw(st.booleans()) else None
    if draw(st.booleans()):
        dep = deployment("llm", replicas=draw(st.integers(0, 6)), shape=draw(shapes()), match_labels=selector)
    else:
        dep = deployment(
            "llm",
            replicas=draw(st.integers(0, 4)),
            prefill=draw(shapes()),
            decode=draw(shapes()),
            match_labels=selector,
        )
    # Clusters that take no new replicas for a reason of their own: draining, being deleted, unreadable.
    fates = {
        c.metadata.name: draw(st.sampled_from(["as-is"] * 5 + ["draining", "deleting", "unreadable"]))
        for c in clusters
        if c.metadata and c.metadata.name
    }
    readable = [c for c in clusters if c.metadata and fates.get(c.metadata.name or "") != "unreadable"]
    return Fleet(
        dep,
        readable,
        others,
        draining=frozenset(n for n, f in fates.items() if f == "draining"),
        deleting=frozenset(n for n, f in fates.items() if f == "deleting"),
        unreadable={n: "spec.nodePools: Input should be a valid list" for n, f in fates.items() if f == "unreadable"},
    )


def run(fleet: Fleet, replicas: list[ModelReplica] | None = None) -> Schedule:
    return plan(
        fleet.deployment,
        fleet.clusters,
        CLASSES,
        fleet.replicas if replicas is None else replicas,
        unreadable=fleet.unreadable,
        deleting=fleet.deleting,
        draining=fleet.draining,
    )


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(fleets())
def test_placements_satisfy_selector_cel_and_topology(fleet: Fleet) -> None:
    got = run(fleet)
    assert got.placed + len(got.unplaced) == got.desired
    assert len({p.replica for p in got.placements} | {u.replica for u in got.unplaced}) == got.desired
    spec = fleet.deployment.spec
    assert spec is not None
    selector = label_selector(spec.clusterSelector)
    clusters = {i.name: i for i in map(cluster_info, fleet.clusters) if i is not None}
    classes = {v.name: v for v in map(class_view, CLASSES) if v is not None}
    requests = {Role.UNIFIED: spec.nodeSelector} | (
        {Role.PREFILL: spec.prefill.nodeSelector, Role.DECODE: spec.decode.nodeSelector}
        if spec.prefill and spec.decode
        else {}
    )
    for placement in got.placements:
        assert placement.origin is Origin.NEW and not placement.stale
        info = clusters[placement.cluster]  # every role on this one cluster
        assert selector.matches(info.labels)
        assert info.ready and not info.cordoned
        assert placement.cluster not in fleet.draining | fleet.deleting | set(fleet.unreadable)
        pools = {p.name: p for p in info.pools}
        for role in placement.roles:
            klass = classes[pools[role.pool].class_name]
            node_selector = requests[role.role]
            assert node_selector is not None
            assert any(fake_matcher(node_selector.cel, d) for d in klass.devices if d.claim is Claim.DRA)
            for want in node_selector.devices or []:
                assert any(fake_matcher(want.cel, d) and d.count >= (want.count or 1) for d in klass.devices)
            assert klass.accelerator_per_node is not None
            assert role.footprint.gpus_per_node <= klass.accelerator_per_node
            assert role.footprint.nodes_per_worker <= pools[role.pool].nodes


@SETTINGS
@given(fleets())
def test_no_placement_exceeds_capacity(fleet: Fleet) -> None:
    got = run(fleet)
    # Each cluster, counting the others' replicas and then these placements as the newest, finds room for all.
    infos = {c.name: c for c in map(cluster_info, fleet.clusters) if c is not None}
    per_node = {v.name: v.accelerator_per_node for v in map(class_view, CLASSES) if v and v.accelerator_per_node}
    listed = [Listed(h) for h in map(replica_occupancy, fleet.replicas) if h is not None]
    for p in got.placements:
        roles = tuple(RoleOccupancy(r.role, r.pool, r.footprint) for r in p.roles)
        mine = Occupancy(NAMESPACE, p.replica, DeploymentKey(NAMESPACE, "llm"), p.cluster, roles)
        listed.append(Listed(mine, created="2026-01-01T00:00:00Z"))
    for name, info in infos.items():
        summary = summarize(info, per_node, [r for r in listed if r.occupancy.cluster == name])
        assert not [r for r in summary.overcommitted if r.startswith(f"{NAMESPACE}/llm-")], name


@SETTINGS
@given(fleets())
def test_explain_chooses_what_the_scheduler_places_and_says_why_alike(fleet: Fleet) -> None:
    got = run(fleet)
    assert all(p.decision is not None for p in got.placements)
    recorded = {
        p.replica: (p.cluster, tuple(dict.fromkeys(r.pool for r in p.roles)), p.decision) for p in got.placements
    }
    explained = explain(fleet.deployment, fleet.view())
    said = {
        s.replica: (s.chosen, tuple(pool for _, pool, _ in s.after), Decision(DecidedBy(s.decided_by), s.why))
        for s in explained.steps
        if s.chosen
    }
    assert said == recorded
    # A cluster that takes no new replicas is never eligible, whatever room it has.
    for check in explained.clusters:
        if check.cluster in fleet.draining | fleet.deleting:
            assert check.verdict != "eligible", check


@SETTINGS
@given(fleets(), st.randoms(use_true_random=False))
def test_result_does_not_depend_on_input_order(fleet: Fleet, rng: random.Random) -> None:
    clusters, classes, replicas = list(fleet.clusters), list(CLASSES), list(fleet.replicas)
    for items in (clusters, classes, replicas):
        rng.shuffle(items)
    shuffled = plan(
        fleet.deployment,
        clusters,
        classes,
        replicas,
        unreadable=fleet.unreadable,
        deleting=fleet.deleting,
        draining=fleet.draining,
    )
    assert shuffled == run(fleet)


@SETTINGS
@given(fleets())
def test_rerunning_on_its_own_output_changes_nothing(fleet: Fleet) -> None:
    first = run(fleet)
    again = run(fleet, [*fleet.replicas, *replicas_of(first, fleet.deployment)])
    assert [(p.replica, p.cluster, p.roles) for p in again.placements] == [
        (p.replica, p.cluster, p.roles) for p in first.placements
    ]
    assert all(p.origin is Origin.KEPT and not p.stale and p.decision is None for p in again.placements)
    assert again.unplaced == first.unplaced
    assert again.removed == ()


@SETTINGS
@given(fleets(), st.integers(0, 5))
def test_scaling_keeps_the_replicas_that_stay(fleet: Fleet, replicas: int) -> None:
    first = run(fleet)
    spec = fleet.deployment.spec
    assert spec is not None
    scaled = Fleet(
        fleet.deployment.model_copy(update={"spec": spec.model_copy(update={"replicas": replicas})}),
        fleet.clusters,
        fleet.replicas,
    )
    got = run(scaled, [*fleet.replicas, *replicas_of(first, fleet.deployment)])
    before = {p.replica: (p.cluster, p.roles) for p in first.placements}
    after = {p.replica: (p.cluster, p.roles) for p in got.placements}
    # Every replica that is not removed keeps its placement; the highest ordinals go first.
    assert {n: v for n, v in before.items() if n not in got.removed} == {
        n: after[n] for n in before if n not in got.removed
    }
    assert len(got.removed) == max(0, len(before) - replicas)
    kept = sorted(int(n.rsplit("-", 1)[1]) for n in before if n not in got.removed)
    assert all(int(n.rsplit("-", 1)[1]) > max(kept, default=-1) for n in got.removed)


def test_strategy_builds_both_shapes() -> None:
    # Guards the generator: a fleet strategy that only ever produced one shape would hollow out the properties.
    seen: set[bool] = set()

    @settings(max_examples=40, deadline=None)
    @given(fleets())
    def probe(fleet: Fleet) -> None:
        assert fleet.deployment.spec is not None
        seen.add(fleet.deployment.spec.prefill is not None)

    probe()
    assert seen == {True, False}
