"""Where a Dedicated run's worker goes: the fleet scheduler, called for a deployment of one replica of one worker.

A batch worker is placed like a serving replica (same clusterSelector, nodeSelector and topology,
same pools, same free capacity each InferenceCluster publishes), but below every serving replica:

1. the free capacity is what the clusters publish, which already counts every ModelReplica: a
   worker only takes GPUs no serving replica holds;
2. the workers of other Dedicated runs placed and not finished are taken off it too, so two runs
   are not placed on the same GPUs;
3. the scheduler places one replica of a synthetic ModelDeployment named after the run; it is the
   same code that places deployments (``modelplane.scheduling.schedule``), called as a caller;
4. none fits: the shortfall reads as a deployment's does (``placed 0 of 1: ...``).

With ``spec.modelCacheRef`` the clusters where the cache's copy is Ready rank first, as for a
deployment (``cached``); with policy Required the worker is placed only on those (reason
CacheNotReady while there is none). A run stages no copy: it uses the ones the cache has. A NodeLocal
copy is served by KServe to an LLMInferenceService, not mounted: a batch worker has none to use.

The deployments' scheduler does not count batch workers (they are not ModelReplicas): a serving
replica may be placed on GPUs a worker holds, and the workload cluster's scheduler then decides
by priority (docs/batch.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pydantic

from modelplane.capacity import PoolKey
from modelplane.modelcache.use import CacheCopy, CacheRef, Policy
from modelplane.modelcache.work import StorageType
from modelplane.problems import describe, invalid
from modelplane.scheduling import FleetView, PoolState, schedule
from modelplane.topology import Footprint, Role
from modelplane_models.model_deployment import ModelDeployment

# The parts of a run's spec that are a deployment's (the XRD copies their schemas verbatim).
SHAPE_FIELDS = ("clusterSelector", "nodeSelector", "workers")


@dataclass(frozen=True)
class Holding:
    """The worker of another run: where it is and the GPUs it holds on its node."""

    run: str  # "namespace/name"
    cluster: str
    pool: str
    gpus: int


@dataclass(frozen=True)
class Placed:
    """Where the worker goes, and why there."""

    cluster: str
    pool: str
    why: str


@dataclass(frozen=True)
class Unplaced:
    """Why the worker has no place: a scheduler's reason and the message a deployment would say."""

    reason: str
    message: str


def gpus_of(spec: Mapping[str, Any]) -> int:
    """The GPUs one worker of a run's spec (as written) claims on its node: tensor x dataLocal."""
    topology = (spec.get("workers") or {}).get("topology") or {}
    try:
        return max(1, int(topology.get("tensor") or 1)) * max(1, int(topology.get("dataLocal") or 1))
    except (TypeError, ValueError):
        return 1


def _without_holdings(view: FleetView, holdings: Iterable[Holding]) -> FleetView:
    """The view with other runs' workers taken off their pools (a fresh placer memo: the figures changed)."""
    pools: dict[PoolKey, PoolState] = dict(view.pools)
    for h in sorted(holdings, key=lambda h: h.run):
        state = pools.get((h.cluster, h.pool))
        if state is None or h.gpus > state.free.per_node:
            continue
        free, _ = state.free.occupy(Footprint(nodes_per_worker=1, gpus_per_node=h.gpus, workers=1))
        pools[h.cluster, h.pool] = PoolState(free, state.counted)
    return replace(view, pools=pools, memo={})


def mountable(copy: CacheCopy | None) -> frozenset[str]:
    """The clusters where a worker can mount the cache's copy: Ready there, a claim (not NodeLocal)."""
    if copy is None or copy.storage is StorageType.NODE_LOCAL:
        return frozenset()
    return copy.ready


def _only(view: FleetView, clusters: frozenset[str]) -> FleetView:
    """The view with only ``clusters`` (a fresh placer memo)."""
    kept = {n: c for n, c in view.clusters.items() if n in clusters}
    pools = {k: p for k, p in view.pools.items() if k[0] in clusters}
    return replace(view, clusters=kept, pools=pools, memo={})


def _cache_gate(cache: CacheRef, copy: CacheCopy | None, view: FleetView) -> FleetView | Unplaced:
    """A Required cache: the view of the clusters with a copy to mount (Unplaced when there is none)."""
    field = "spec.modelCacheRef"
    if copy is None:
        return Unplaced("CacheNotReady", f"{field}.name: ModelCache {cache.name} not found in the run's namespace")
    if copy.storage is StorageType.NODE_LOCAL:
        why = f"{field}: ModelCache {cache.name} has storage type NodeLocal, which a batch worker cannot mount"
        return Unplaced("CacheNotReady", why)
    ready = mountable(copy) & set(view.clusters)
    if not ready:
        phases = ", ".join(f"{c} {p}" for c, (p, _) in sorted(copy.clusters.items())) or "no copy on any cluster"
        why = f"{field}: ModelCache {cache.name} has no Ready copy ({phases}); policy Required keeps the worker off"
        return Unplaced("CacheNotReady", f"{why} clusters without one")
    return _only(view, ready)


def place(  # noqa: PLR0913 - the run, its fleet and its cache, each named
    name: str,
    namespace: str,
    spec: Mapping[str, Any],
    view: FleetView,
    holdings: Iterable[Holding],
    *,
    cache: CacheRef | None = None,
    copy: CacheCopy | None = None,
) -> Placed | Unplaced:
    """Place a run's worker on ``view`` (see the module's steps).

    Args:
        name: The ModelBatchRun's name.
        namespace: Its namespace.
        spec: Its spec as written (only ``SHAPE_FIELDS`` are read).
        view: The fleet (``modelplane.scheduling.view.build_view``).
        holdings: The workers of the other runs.
        cache: ``spec.modelCacheRef`` (None: none).
        copy: The ModelCache it names, as read (None: not found).
    """
    shape = {k: spec[k] for k in SHAPE_FIELDS if k in spec}
    body = {"replicas": 1, **shape, "workers": {**(shape.get("workers") or {}), "count": 1}}
    try:
        deployment = ModelDeployment.model_validate({"metadata": {"name": name, "namespace": namespace}, "spec": body})
    except pydantic.ValidationError as err:
        return Unplaced("InvalidSpec", f"spec: {describe(invalid(err))}")
    cached: frozenset[str] | None = None
    if cache is not None:
        cached = mountable(copy)
        if cache.policy is Policy.REQUIRED:
            gated = _cache_gate(cache, copy, view)
            if isinstance(gated, Unplaced):
                return gated
            view = gated
    plan = schedule(deployment, _without_holdings(view, holdings), cached=cached)
    if not plan.placements:
        message = plan.message
        if cache is not None and cache.policy is Policy.REQUIRED:
            ready = ", ".join(sorted(view.clusters))
            message += f" (only clusters with a Ready copy of ModelCache {cache.name}: {ready})"
        return Unplaced(str(plan.reason or "InsufficientCapacity"), message)
    placed = plan.placements[0]
    why = placed.decision.message if placed.decision is not None else ""
    return Placed(placed.cluster, placed.pool(Role.UNIFIED) or "", why)
