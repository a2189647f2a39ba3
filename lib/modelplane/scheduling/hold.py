"""Hold what runs: whether an existing replica keeps its observed spec, or takes the deployment's.

Deleting or rewriting a serving replica is an outage of that replica, so an
existing replica keeps its placement and its serving shape exactly as they are
unless the deployment's spec can be applied to it safely. For each existing
replica, the first that applies:

1. its InferenceCluster is being deleted or drains, or its pool left the
   cluster's ``spec.nodePools`` and is kept only while replicas run on it
   (``status.removingPools``; the user's act), or a replica of a higher
   priority takes its place (its cluster, or a FleetQuota, lists it as
   preempted; its quota's ``preemption: LowerPriority``; unless step 2's
   input is missing, which holds it): it is
   *leaving*, kept unchanged while a replacement is placed elsewhere, and
   retired by the scheduler once enough replicas are Ready without it; or its
   cluster is *lost* past the failover grace: kept unchanged, not counted, and
   replaced elsewhere until the cluster returns;
2. an input its placement depends on is gone or cannot be read (its cluster is
   not listed, or listed but malformed; its pool is no longer in the cluster's
   spec; the pool's class is missing or invalid): kept unchanged, since nothing
   about it can be verified, and an absent input never shrinks what runs;
3. it runs the other kind of shape (unified or disaggregated): it must be placed
   again (``None``);
4. its serving shape differs from the deployment's and the new shape cannot run
   on its pool (the node selector fails to evaluate or matches no device of the
   class, a device requirement is unmet, a worker needs more GPUs than a node has
   or more nodes than the pool has): kept at its previous shape, the change held
   back (the scheduler adds one more such case: the larger shape does not fit the
   pool's free capacity);
5. otherwise it takes the deployment's shape where it is, possibly *stale*: its
   cluster no longer matches clusterSelector, or its class no longer matches an
   unchanged shape (as Kubernetes ignores node affinity during execution).

The same decision serves a rolling update: a replica is held at its revision
until the new one may be applied to it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from modelplane.capacity import Occupancy
from modelplane.capacity.clusters import ClusterInfo
from modelplane.scheduling.devices import ClassJudge, PoolReason, RoleRequest
from modelplane.scheduling.labels import LabelSelector
from modelplane.scheduling.placement import Held, HoldReason, Origin, Placement, RolePlacement
from modelplane.scheduling.rejection import pool_message

# Misfits that prove the deployment's shape cannot run on a pool (not a missing input).
_SHAPE_MISFITS = {
    PoolReason.CEL_ERROR: HoldReason.CEL_ERROR,
    PoolReason.SELECTOR_MISMATCH: HoldReason.SELECTOR_MISMATCH,
    PoolReason.DEVICES_MISSING: HoldReason.DEVICES_MISSING,
    PoolReason.TOPOLOGY_EXCEEDS_NODE: HoldReason.TOPOLOGY_EXCEEDS_NODE,
}
# Misfits that prove a kept placement of an unchanged shape no longer satisfies the spec.
_STALE_MISFITS = frozenset({PoolReason.SELECTOR_MISMATCH, PoolReason.DEVICES_MISSING, PoolReason.TOPOLOGY_EXCEEDS_NODE})
_CLASS_MISSING = {
    PoolReason.CLASS_NOT_FOUND: HoldReason.CLASS_NOT_FOUND,
    PoolReason.INVALID_CLASS: HoldReason.INVALID_CLASS,
}


def observed_roles(occupancy: Occupancy) -> tuple[RolePlacement, ...]:
    """What an existing replica runs, per role: its pool and its own footprint."""
    return tuple(RolePlacement(r.role, r.pool, r.footprint) for r in occupancy.roles)


def existing_placement(  # noqa: PLR0913 - the replica, what it is judged against, and how
    name: str,
    ordinal: int,
    occupancy: Occupancy,
    cluster: ClusterInfo | None,
    *,
    unreadable: Mapping[str, str],
    deleting: Collection[str],
    requests: Sequence[RoleRequest],
    judge: ClassJudge,
    selector: LabelSelector,
    changed: bool,
    draining: Collection[str] = (),
    lost: str = "",
    preempted: str = "",
) -> Placement | None:
    """Decide what an existing replica keeps (see the module's steps).

    Args:
        name: The replica's name.
        ordinal: Its ordinal.
        occupancy: What it runs (cluster, pools and footprints), from its own spec.
        cluster: Its InferenceCluster, or None when the cluster is not in the fleet.
        unreadable: Clusters that exist but cannot be read, by name, with why.
        deleting: Clusters being deleted.
        requests: The deployment's roles as they are now.
        judge: Judges classes for roles.
        selector: The deployment's clusterSelector.
        changed: Whether the deployment's shape differs from the one the replica runs.
        draining: Clusters that drain.
        lost: Why its cluster counts as lost past the failover grace ("" when it does not).
        preempted: Why it gives way to a higher priority ("" when it does not): it is leaving.

    Returns:
        Its placement: ``held`` when it keeps its observed spec, else with the
        deployment's footprints; None when it must be placed again.
    """
    held = _input_missing(occupancy, cluster, unreadable, deleting, judge)
    if held is None or not held.leaving:
        if occupancy.cluster in draining:
            held = Held(HoldReason.CLUSTER_DRAINING, f"InferenceCluster {occupancy.cluster} drains")
        elif preempted and held is None:
            # Not while an input it runs on is missing (its pool's class): that its place is given away
            # cannot be checked then, and an absent input never shrinks what runs (step 2 holds it).
            held = Held(HoldReason.PREEMPTED, preempted)
        elif lost:
            held = Held(HoldReason.CLUSTER_LOST, lost)
    if held is None and cluster is not None:
        if not occupancy.roles or [r.role for r in occupancy.roles] != [r.role for r in requests]:
            return None
        held = _shape_misfit(occupancy, cluster, requests, judge) if changed else None
        if held is None:
            roles = tuple(
                RolePlacement(r.role, h.pool, r.footprint) for r, h in zip(requests, occupancy.roles, strict=True)
            )
            stale = _stale(occupancy, cluster, requests, judge, selector)
            return Placement(name, ordinal, occupancy.cluster, roles, Origin.KEPT, stale)
    return Placement(name, ordinal, occupancy.cluster, observed_roles(occupancy), Origin.KEPT, held=held)


def _input_missing(
    occupancy: Occupancy,
    cluster: ClusterInfo | None,
    unreadable: Mapping[str, str],
    deleting: Collection[str],
    judge: ClassJudge,
) -> Held | None:
    """Why the replica's placement cannot be verified (its cluster, a pool or a pool's class), or it is leaving."""
    if occupancy.cluster in deleting:
        return Held(HoldReason.CLUSTER_DELETING, f"InferenceCluster {occupancy.cluster} is being deleted")
    if cluster is None:
        if occupancy.cluster in unreadable:
            why = f"InferenceCluster {occupancy.cluster} cannot be read ({unreadable[occupancy.cluster]})"
            return Held(HoldReason.CLUSTER_UNREADABLE, why)
        why = f"InferenceCluster {occupancy.cluster} is not in the fleet (deleted, or not listed)"
        return Held(HoldReason.CLUSTER_GONE, why)
    return _pool_missing(occupancy, cluster, judge)


def _pool_missing(occupancy: Occupancy, cluster: ClusterInfo, judge: ClassJudge) -> Held | None:
    """Why a pool of the replica, or its class, cannot be verified; or that the pool is being removed (leaving)."""
    removing = [r.pool for r in occupancy.roles if r.pool in cluster.removing]
    if removing:
        why = f"pool {removing[0]} is being removed from InferenceCluster {cluster.name} (not in spec.nodePools)"
        return Held(HoldReason.POOL_REMOVING, why)
    pools = {p.name: p for p in cluster.pools}
    for role in occupancy.roles:
        pool = pools.get(role.pool)
        if pool is None:
            why = f"pool {role.pool} is not in InferenceCluster {cluster.name}'s spec.nodePools"
            return Held(HoldReason.POOL_NOT_FOUND, why)
        missing = judge.class_problem(pool.class_name)
        if missing is not None:
            misfit, message = missing
            return Held(_CLASS_MISSING[misfit], f"pool {role.pool} of InferenceCluster {cluster.name}: {message}")
    return None


def _shape_misfit(
    occupancy: Occupancy, cluster: ClusterInfo, requests: Sequence[RoleRequest], judge: ClassJudge
) -> Held | None:
    """Why the deployment's changed shape cannot run on the replica's pools, or None when it can."""
    pools = {p.name: p for p in cluster.pools}
    for request, role in zip(requests, occupancy.roles, strict=True):
        pool = pools[role.pool]
        fit = judge.fit(request, pool.class_name)
        # Selector misfits name their field; a topology's is named here.
        topology = request.field.removesuffix("nodeSelector") + "workers.topology"
        if fit.misfit in _SHAPE_MISFITS:
            message = f"{topology}: {fit.message}" if fit.misfit is PoolReason.TOPOLOGY_EXCEEDS_NODE else fit.message
            why = pool_message(role.role, role.pool, message, len(requests))
            return Held(_SHAPE_MISFITS[fit.misfit], f"the new shape cannot run on {why}")
        needs = request.footprint.nodes_per_worker
        if needs > pool.nodes:
            message = f"{topology}: a worker needs {needs} nodes; the pool has {pool.nodes}"
            why = pool_message(role.role, role.pool, message, len(requests))
            return Held(HoldReason.TOO_FEW_NODES, f"the new shape cannot run on {why}")
    return None


def _stale(
    occupancy: Occupancy,
    cluster: ClusterInfo,
    requests: Sequence[RoleRequest],
    judge: ClassJudge,
    selector: LabelSelector,
) -> str:
    """Why a placement that takes the deployment's shape no longer satisfies the spec; "" when it does."""
    pools = {p.name: p for p in cluster.pools}
    stale = [] if selector.matches(cluster.labels) else ["the cluster no longer matches clusterSelector"]
    for request, role in zip(requests, occupancy.roles, strict=True):
        fit = judge.fit(request, pools[role.pool].class_name)
        if fit.misfit in _STALE_MISFITS:
            stale.append(pool_message(role.role, role.pool, fit.message, len(requests)))
    return "; ".join(stale)
