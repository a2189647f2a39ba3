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


def place(
    name: str, namespace: str, spec: Mapping[str, Any], view: FleetView, holdings: Iterable[Holding]
) -> Placed | Unplaced:
    """Place a run's worker on ``view`` (see the module's steps).

    Args:
        name: The ModelBatchRun's name.
        namespace: Its namespace.
        spec: Its spec as written (only ``SHAPE_FIELDS`` are read).
        view: The fleet (``modelplane.scheduling.view.build_view``).
        holdings: The workers of the other runs.
    """
    shape = {k: spec[k] for k in SHAPE_FIELDS if k in spec}
    body = {"replicas": 1, **shape, "workers": {**(shape.get("workers") or {}), "count": 1}}
    try:
        deployment = ModelDeployment.model_validate({"metadata": {"name": name, "namespace": namespace}, "spec": body})
    except pydantic.ValidationError as err:
        return Unplaced("InvalidSpec", f"spec: {describe(invalid(err))}")
    plan = schedule(deployment, _without_holdings(view, holdings))
    if not plan.placements:
        return Unplaced(str(plan.reason or "InsufficientCapacity"), plan.message)
    placed = plan.placements[0]
    why = placed.decision.message if placed.decision is not None else ""
    return Placed(placed.cluster, placed.pool(Role.UNIFIED) or "", why)
