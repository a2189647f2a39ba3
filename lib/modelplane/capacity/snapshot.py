"""What a cluster's scheduler reports about GPUs, normalised, and how it maps onto node pools.

Each scheduler adapter (one module per scheduler, see ``adapters``) reads the
scheduler's own status objects and returns a ``Snapshot``: per GPU resource
(and, for Kueue, per ResourceFlavor) the GPUs in use and the nominal quota.
``pool_observations`` turns a snapshot into per-pool ``Observed`` figures.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.capacity.observed import Observed, Source
from modelplane.cel.k8s import QuantityError, exact, parse_quantity

# Extended resources that count GPUs, besides the DRA device classes of the cluster's pools.
GPU_RESOURCES = frozenset({"nvidia.com/gpu", "amd.com/gpu"})


@dataclass(frozen=True)
class Figure:
    """What a scheduler reports for one GPU resource.

    Attributes:
        resource: The resource name, e.g. ``nvidia.com/gpu``.
        in_use: GPUs allocated (KAI) or used by admitted workloads (Kueue).
        quota: The nominal quota, when the scheduler has one (None: unlimited or unset).
        flavor: The Kueue ResourceFlavor ("" for KAI).
        pool: The node pool the figure belongs to, when the scheduler says ("" when it does not).
    """

    resource: str
    in_use: int
    quota: int | None = None
    flavor: str = ""
    pool: str = ""


@dataclass(frozen=True)
class Snapshot:
    """A scheduler's view of a cluster's GPUs.

    Attributes:
        source: The scheduler.
        read: The status objects read, e.g. ``("Queue inference",)``.
        figures: One figure per GPU resource (and flavor), sorted.
        missing: Why the snapshot is not usable ("" when it is), e.g. an object has no status yet.
    """

    source: Source
    read: tuple[str, ...]
    figures: tuple[Figure, ...] = ()
    missing: str = ""

    @property
    def known(self) -> bool:
        """Whether the scheduler's figures can be used."""
        return not self.missing

    @property
    def in_use(self) -> int:
        """GPUs in use over every figure."""
        return sum(f.in_use for f in self.figures)


@dataclass(frozen=True)
class PoolObservations:
    """A snapshot spread over a cluster's pools.

    Attributes:
        pools: Observed GPUs in use per pool name; pools the scheduler says nothing about are absent.
        unassigned: GPUs in use the scheduler reports for no particular pool of a cluster with several.
    """

    pools: Mapping[str, Observed]
    unassigned: int = 0


@dataclass(frozen=True)
class StatusObject:
    """A scheduler's status object as observed, with the status it reports.

    Attributes:
        obj: The object, conformed to what its adapter reads of it.
        status: Its ``status``.
        read: The objects read to find it, for ``Snapshot.read``.
    """

    obj: Mapping[str, Any]
    status: Mapping[str, Any]
    read: tuple[str, ...]


def status_object(
    objects: Sequence[Mapping[str, Any]], kind: str, source: Source, what: str, also_read: Sequence[str] = ()
) -> StatusObject | Snapshot:
    """The observed object of ``kind`` and its status; else the snapshot that says why there is none yet.

    Args:
        objects: The scheduler's status objects as observed on the cluster.
        kind: The kind whose status tells capacity (``Queue``, ``ClusterQueue``).
        source: The scheduler.
        what: The object as messages name it (``the KAI Queue``).
        also_read: Other objects read alongside it, as ``Snapshot.read`` names them.
    """
    found = next((o for o in objects if o.get("kind") == kind), None)
    if found is None:
        return Snapshot(source, (), missing=f"{what} has not been observed yet")
    name = str(found.get("metadata", {}).get("name", ""))
    read = (f"{kind} {name}", *also_read)
    status = found.get("status")
    if not isinstance(status, Mapping):
        return Snapshot(source, read, missing=f"{what} {name} reports no status yet")
    return StatusObject(found, status, read)


def gpus(value: Any) -> int:  # noqa: ANN401 - an int-or-string quantity from a status object
    """A quantity of devices as a whole number (rounded up; 0 for what does not parse)."""
    try:
        return max(0, math.ceil(exact(parse_quantity(str(value)))))
    except QuantityError:
        return 0


def is_gpu(resource: str, device_classes: Iterable[str] = ()) -> bool:
    """Whether ``resource`` counts GPUs: a known extended resource or one of the pools' DRA device classes."""
    return resource in GPU_RESOURCES or resource in set(device_classes)


def pool_observations(snapshot: Snapshot, pools: Sequence[str]) -> PoolObservations:
    """Spread a scheduler's figures over the cluster's pools.

    A figure that names a pool (a Kueue flavor with the pool's node label, or
    named after the pool) counts for that pool. The others count for the
    cluster's only pool; a cluster with several pools cannot tell which pool
    they are on, so they are reported as unassigned and those pools keep
    their declared figures.

    Args:
        snapshot: The scheduler's snapshot (an unusable one gives nothing).
        pools: The cluster's pool names, in spec order.

    Returns:
        The observed figures per pool and the GPUs left unassigned.
    """
    if not snapshot.known:
        return PoolObservations({})
    by_pool: dict[str, int] = defaultdict(int)
    unassigned = 0
    for figure in snapshot.figures:
        pool = figure.pool or (figure.flavor if figure.flavor in pools else "")
        if pool in pools:
            by_pool[pool] += figure.in_use
        elif figure.pool:
            continue  # it stands for nodes of a pool this cluster does not declare
        elif len(pools) == 1:
            by_pool[pools[0]] += figure.in_use
        else:
            unassigned += figure.in_use
    # A scheduler that reports nothing for a one-pool cluster reports an idle pool.
    if len(pools) == 1 and not unassigned:
        by_pool.setdefault(pools[0], 0)
    return PoolObservations({p: Observed(snapshot.source, by_pool[p]) for p in pools if p in by_pool}, unassigned)
