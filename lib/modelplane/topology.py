"""How many nodes and GPUs a worker, a role and a replica occupy.

One worker spans ``pipeline x (data / dataLocal)`` nodes with ``tensor x
dataLocal`` GPUs on each node; a role runs ``workers.count`` such workers and a
replica is its roles together (unified, or prefill and decode).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from modelplane.problems import Problem


class Role(StrEnum):
    """A role of a replica, named like the keys of ``status.placements[].pools``."""

    UNIFIED = "unified"
    PREFILL = "prefill"
    DECODE = "decode"


class TopologyError(ValueError):
    """A topology that no worker can have, naming the field at fault."""

    def __init__(self, problem: Problem) -> None:
        """Carry the problem; the message is its ``field: message`` form."""
        super().__init__(str(problem))
        self.problem = problem


class TopologyLike(Protocol):
    """A ``workers.topology`` of any generated model (ModelDeployment or ModelReplica)."""

    @property
    def tensor(self) -> int:
        """Tensor-parallel degree."""

    @property
    def pipeline(self) -> int | None:
        """Pipeline-parallel degree."""

    @property
    def data(self) -> int | None:
        """Data-parallel degree inside one worker."""

    @property
    def dataLocal(self) -> int | None:  # noqa: N802 - the API's field name
        """Data-parallel ranks per node."""


class WorkersLike(Protocol):
    """A ``workers`` block of any generated model."""

    @property
    def count(self) -> int | None:
        """Workers of the role."""

    @property
    def topology(self) -> TopologyLike:
        """How one worker is sharded."""


class RoleLike(Protocol):
    """A ``spec.prefill`` or ``spec.decode`` block of any generated model."""

    @property
    def workers(self) -> WorkersLike:
        """The role's workers."""


class ShapeLike(Protocol):
    """The serving shape of a ModelDeployment or ModelReplica spec."""

    @property
    def workers(self) -> WorkersLike | None:
        """The unified workers."""

    @property
    def prefill(self) -> RoleLike | None:
        """The prefill role."""

    @property
    def decode(self) -> RoleLike | None:
        """The decode role."""


@dataclass(frozen=True)
class Footprint:
    """What one role of a replica occupies.

    Attributes:
        nodes_per_worker: Nodes one worker spans (``pipeline x data / dataLocal``).
        gpus_per_node: GPUs one worker uses on each of its nodes (``tensor x dataLocal``).
        workers: Workers of the role (``workers.count``).
    """

    nodes_per_worker: int
    gpus_per_node: int
    workers: int

    @property
    def gpus_per_worker(self) -> int:
        """GPUs one worker uses over all its nodes."""
        return self.nodes_per_worker * self.gpus_per_node

    @property
    def total_gpus(self) -> int:
        """GPUs of the whole role."""
        return self.workers * self.gpus_per_worker

    @property
    def node_slots(self) -> int:
        """Per-node shares the role needs (one per node of every worker)."""
        return self.workers * self.nodes_per_worker


def footprint(
    *, tensor: int, pipeline: int = 1, data: int = 1, data_local: int = 1, workers: int = 1, field: str = "topology"
) -> Footprint:
    """Compute the footprint of ``workers`` workers of one topology.

    Args:
        tensor: Tensor-parallel degree.
        pipeline: Pipeline-parallel degree.
        data: Data-parallel degree inside one worker.
        data_local: Data-parallel ranks on each node.
        workers: How many workers of this shape.
        field: The path of the topology, used in errors (e.g. ``spec.workers.topology``).

    Returns:
        The role's footprint.

    Raises:
        TopologyError: A degree or the worker count is below 1, or ``data`` is
            not a multiple of ``data_local``.
    """
    for name, value in (("tensor", tensor), ("pipeline", pipeline), ("data", data), ("dataLocal", data_local)):
        if value < 1:
            raise TopologyError(Problem(f"{field}.{name}", f"must be at least 1, not {value}"))
    if workers < 1:
        raise TopologyError(Problem(f"{field}.count", f"must be at least 1, not {workers}"))
    if data % data_local:
        raise TopologyError(
            Problem(f"{field}.data", f"must be a multiple of topology.dataLocal ({data_local}), not {data}")
        )
    return Footprint(
        nodes_per_worker=pipeline * (data // data_local), gpus_per_node=tensor * data_local, workers=workers
    )


def workers_footprint(workers: WorkersLike, *, field: str) -> Footprint:
    """Compute the footprint of a generated ``workers`` block (defaults applied).

    Args:
        workers: The ``workers`` block of a role.
        field: The path of the block (e.g. ``spec.prefill.workers``), used in errors.

    Raises:
        TopologyError: The topology is invalid.
    """
    topology = workers.topology
    return footprint(
        tensor=topology.tensor,
        pipeline=topology.pipeline or 1,
        data=topology.data or 1,
        data_local=topology.dataLocal or 1,
        workers=workers.count or 1,
        field=f"{field}.topology",
    )


@dataclass(frozen=True)
class ReplicaFootprint:
    """The footprint of every role of one replica, in role order (unified, or prefill then decode)."""

    roles: tuple[tuple[Role, Footprint], ...]

    @property
    def total_gpus(self) -> int:
        """GPUs of the whole replica."""
        return sum(f.total_gpus for _, f in self.roles)

    @property
    def node_slots(self) -> int:
        """Per-node shares of the whole replica."""
        return sum(f.node_slots for _, f in self.roles)

    def of(self, role: Role) -> Footprint | None:
        """The footprint of ``role``, or None when the replica has no such role."""
        return next((f for r, f in self.roles if r is role), None)


def replica_footprint(spec: ShapeLike) -> ReplicaFootprint:
    """Compute the footprint of one replica of a ModelDeployment or ModelReplica spec.

    Args:
        spec: The spec: unified (``workers``) or disaggregated (``prefill`` and ``decode``).

    Returns:
        One footprint per role.

    Raises:
        TopologyError: No serving shape, both shapes, or an invalid topology.
    """
    unified = spec.workers is not None
    disaggregated = spec.prefill is not None or spec.decode is not None
    if unified == disaggregated:
        raise TopologyError(
            Problem("spec", "exactly one serving shape must be set: spec.workers, or spec.prefill and spec.decode")
        )
    if spec.workers is not None:
        return ReplicaFootprint(((Role.UNIFIED, workers_footprint(spec.workers, field="spec.workers")),))
    if spec.prefill is None or spec.decode is None:
        missing = "spec.decode" if spec.decode is None else "spec.prefill"
        raise TopologyError(Problem(missing, "required when the other disaggregated role is set"))
    return ReplicaFootprint(
        (
            (Role.PREFILL, workers_footprint(spec.prefill.workers, field="spec.prefill.workers")),
            (Role.DECODE, workers_footprint(spec.decode.workers, field="spec.decode.workers")),
        )
    )
