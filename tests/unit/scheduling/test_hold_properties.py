"""Never drop, never change silently: the scheduler's invariants for existing replicas on perturbed fleets.

A deployment is placed on a random fleet; then the fleet and the spec change at
random (clusters vanish, pools are renamed, classes go, clusters turn
unreadable, the shape or replica count changes, replicas are Ready or not).
Every existing replica must still be placed, removed by scaling down, or
retired because its cluster is gone and enough replicas are Ready without it;
a kept replica either keeps exactly what it runs or takes a shape that can run
on its pool, where it is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.capacity import Occupancy, replica_occupancy
from modelplane.scheduling import Existing, Origin, Schedule, serving_shape, shape_revision
from modelplane.scheduling.devices import Claim, class_view
from modelplane.scheduling.hold import observed_roles
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from tests.unit.fleet import fake_matcher, plan, replicas_of
from tests.unit.scheduling.test_properties import CLASSES, Fleet, fleets, shapes


def _revision(dep: ModelDeployment) -> str:
    assert dep.spec is not None
    return shape_revision(serving_shape(dep.spec.model_dump(exclude_none=True, by_alias=True)))


def _rename_pool(cluster: InferenceCluster) -> InferenceCluster:
    body = cluster.model_dump(exclude_none=True, by_alias=True)
    for pool in body["spec"].get("nodePools") or []:
        pool["name"] = f"{pool['name']}x"
    return InferenceCluster.model_validate(body)


@dataclass(frozen=True)
class Perturbed:
    """A fleet, what the deployment ran on it, and the fleet after a change."""

    fleet: Fleet
    own: dict[int, Occupancy]
    after: Fleet
    existing: Existing
    unreadable: dict[str, str]
    deleting: frozenset[str]


@st.composite
def perturbed(draw: st.DrawFn) -> Perturbed:
    fleet = draw(fleets())
    first = plan(fleet.deployment, fleet.clusters, CLASSES, fleet.replicas)
    own: dict[int, Occupancy] = {}
    for replica, placement in zip(replicas_of(first, fleet.deployment), first.placements, strict=True):
        occupancy = replica_occupancy(replica)
        assert occupancy is not None
        ready = draw(st.booleans())
        own[placement.ordinal] = replace(occupancy, ready=ready, revision=_revision(fleet.deployment))
    clusters, unreadable, deleting = [], {}, set()
    for c in fleet.clusters:
        name = c.metadata.name if c.metadata and c.metadata.name else ""
        fate = draw(st.sampled_from(["keep"] * 4 + ["gone", "deleting", "renamed", "unreadable"]))
        if fate in ("keep", "deleting"):
            clusters.append(c)
        if fate == "deleting":
            deleting.add(name)
        elif fate == "renamed":
            clusters.append(_rename_pool(c))
        elif fate == "unreadable":
            unreadable[name] = "spec.nodePools: Input should be a valid list"
    dep = fleet.deployment
    spec = dep.spec
    assert spec is not None
    if draw(st.booleans()):
        changed = draw(shapes())
        if spec.workers is not None:
            update = {"nodeSelector": changed.node_selector(), "workers": changed.workers()}
            spec = type(spec).model_validate({**spec.model_dump(exclude_none=True, by_alias=True), **update})
    spec = spec.model_copy(update={"replicas": draw(st.integers(0, 6))})
    dep = dep.model_copy(update={"spec": spec})
    after = Fleet(dep, clusters, fleet.replicas)
    return Perturbed(
        fleet, own, after, Existing(replicas=own, revision=_revision(dep)), unreadable, frozenset(deleting)
    )


def _run(case: Perturbed) -> Schedule:
    after = case.after
    return plan(
        after.deployment,
        after.clusters,
        CLASSES,
        after.replicas,
        existing=case.existing,
        unreadable=case.unreadable,
        deleting=case.deleting,
    )


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(perturbed())
def test_an_existing_replica_is_only_removed_for_the_users_reason(
    case: Perturbed,
) -> None:
    own, existing = case.own, case.existing
    got = _run(case)
    placed = {p.replica for p in got.placements}
    leaving = {h.name for h in own.values() if h.cluster in case.deleting}
    for occupancy in own.values():
        assert occupancy.name in placed | set(got.removed) | set(got.retired)
    # Scaling down removes what exceeds spec.replicas (and maxSurge more while a rollout has old replicas
    # left), never a leaving replica (those are retired), and waits while a replica's inputs cannot be read.
    counting = [h for h in own.values() if h.cluster not in case.deleting]
    allowance = 1 if any(h.revision != existing.revision for h in counting) else 0
    assert len(got.removed) + got.waiting == max(0, len(counting) - got.desired - allowance)
    assert not set(got.removed) & leaving
    unverified = [p for p in got.placements if p.held is not None and p.held.reason.input_missing]
    assert not (unverified and got.removed)
    # Only leaving or old replicas are retired, and a Ready one only while enough replicas stay Ready without it
    # (a replica that is not Ready takes nothing away from the bound).
    old = {h.name for h in own.values() if h.revision != existing.revision}
    assert set(got.retired) <= leaving | old
    ready = sum(1 for p in got.placements if p.origin is Origin.KEPT and _ready(own, p.ordinal))
    if any(h.ready for h in own.values() if h.name in got.retired):
        assert ready >= got.desired


def _ready(own: dict[int, Occupancy], ordinal: int) -> bool:
    return ordinal in own and own[ordinal].ready


@SETTINGS
@given(perturbed())
def test_a_kept_replica_keeps_what_it_runs_or_takes_a_shape_that_runs_there(
    case: Perturbed,
) -> None:
    own, after, existing = case.own, case.after, case.existing
    got = _run(case)
    clusters = {c.metadata.name: c for c in after.clusters if c.metadata and c.metadata.name}
    views = {v.name: v for v in map(class_view, CLASSES) if v is not None}
    spec = after.deployment.spec
    assert spec is not None
    for p in got.placements:
        occupancy = own.get(p.ordinal)
        if occupancy is None or p.origin is Origin.MOVED:
            continue
        assert p.cluster == occupancy.cluster
        if p.held is not None:
            assert p.roles == observed_roles(occupancy)
            continue
        # It takes the spec's shape where it runs: the shape must be able to run on each of its pools.
        assert [r.pool for r in p.roles] == [r.pool for r in occupancy.roles]
        cluster = clusters[p.cluster]
        assert cluster.spec is not None
        classes = {pool.name: pool.className for pool in cluster.spec.nodePools or []}
        for role in p.roles:
            view = views[classes[role.pool]]
            assert view.accelerator_per_node is not None
            assert role.footprint.gpus_per_node <= view.accelerator_per_node
            selector = spec.nodeSelector if spec.workers is not None else None
            if selector is not None and occupancy.revision != existing.revision:
                assert any(fake_matcher(selector.cel, d) for d in view.devices if d.claim is Claim.DRA)
