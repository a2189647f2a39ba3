"""What a ModelReplica holds: per role, its cluster, its pool and its footprint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from modelplane.names import (
    PREEMPTION_ANNOTATION,
    PREEMPTION_LOWER_PRIORITY,
    PRIORITY_ANNOTATION,
    PRIORITY_CLASS_ANNOTATION,
)
from modelplane.readiness import entry_of, readiness
from modelplane.topology import Footprint, Role, TopologyError, WorkersLike, footprint
from modelplane_models.model_replica import ModelReplica


@dataclass(frozen=True, order=True)
class DeploymentKey:
    """A ModelDeployment by namespace and name."""

    namespace: str
    name: str


@dataclass(frozen=True)
class RoleOccupancy:
    """One role of a replica on one pool."""

    role: Role
    pool: str
    footprint: Footprint


@dataclass(frozen=True)
class Occupancy:
    """The GPUs one ModelReplica holds, from its own spec.

    Callers with many replicas may build occupancies straight from their own
    representation instead of validating whole ModelReplica models.

    Attributes:
        namespace: The replica's namespace.
        name: The replica's name.
        deployment: The ModelDeployment it belongs to (``spec.deploymentRef``), if any.
        cluster: Its InferenceCluster (``spec.inferenceClusterRef.name``).
        roles: Its roles, each with its pool and footprint (none when its spec names no pool).
        ready: Whether its ``Ready`` condition is True (its pods run, so a cluster
            scheduler's observed usage includes them).
        revision: The revision of the serving shape it runs
            (``modelplane.scheduling.shape_revision``), "" when not known.
        replaces: For a replica placed to replace one whose cluster is lost, that
            replica's name (its ``modelplane.ai/replaces`` annotation), else "".
        priority: Its priority's value (``modelplane.ai/priority``; 0 without one): a pool and a
            FleetQuota give capacity to replicas not serving yet highest first.
        priority_class: Its FleetPriorityClass (``modelplane.ai/priority-class``), "" for none.
        preemptible: Whether, serving, it may give way to a higher priority for physical capacity
            (``modelplane.ai/preemption: LowerPriority``: every FleetQuota of its namespace allows it).
    """

    namespace: str
    name: str
    deployment: DeploymentKey | None
    cluster: str
    roles: tuple[RoleOccupancy, ...]
    ready: bool = False
    revision: str = ""
    replaces: str = ""
    priority: int = 0
    priority_class: str = ""
    preemptible: bool = False


_MOST_PRIORITY = 1_000_000_000  # FleetPriorityClass's bounds


def priority_of(annotations: Mapping[str, str] | None) -> tuple[int, str]:
    """A replica's priority value and class from its annotations; (0, "") when absent or not a value in bounds."""
    if not annotations:
        return 0, ""
    text = annotations.get(PRIORITY_ANNOTATION, "")
    try:
        value = int(text)
    except ValueError:
        return 0, ""
    if abs(value) > _MOST_PRIORITY:
        return 0, ""
    return value, annotations.get(PRIORITY_CLASS_ANNOTATION, "")


def preemptible_of(annotations: Mapping[str, str] | None) -> bool:
    """Whether a replica's annotations say it may give way to a higher priority (anything else: it may not)."""
    return annotations is not None and annotations.get(PREEMPTION_ANNOTATION) == PREEMPTION_LOWER_PRIORITY


@cache
def _footprint(tensor: int, pipeline: int, data: int, data_local: int, workers: int) -> Footprint:
    # Many replicas share a few shapes: compute each once. A replica that exists
    # holds GPUs even if admission should have refused its topology: count nodes
    # per worker rounded up, never less.
    try:
        return footprint(tensor=tensor, pipeline=pipeline, data=data, data_local=data_local, workers=workers)
    except TopologyError:
        data, data_local = max(1, data), max(1, data_local)
        return Footprint(
            nodes_per_worker=max(1, pipeline) * -(-data // data_local),
            gpus_per_node=max(1, tensor) * data_local,
            workers=max(1, workers),
        )


def role_occupancy(role: Role, pool: str, workers: WorkersLike) -> RoleOccupancy:
    """One role of a replica: its pool and what its workers occupy there.

    Callers that read replicas from their own representation build each role with this.
    """
    t = workers.topology
    fp = _footprint(t.tensor, t.pipeline or 1, t.data or 1, t.dataLocal or 1, workers.count or 1)
    return RoleOccupancy(role, pool, fp)


def replica_occupancy(replica: ModelReplica) -> Occupancy | None:
    """Read what a ModelReplica holds from its spec.

    Args:
        replica: The ModelReplica as observed.

    Returns:
        Its occupancy (with no roles when its spec names no pool for a role: such a
        replica holds nothing Modelplane can account for), or None when it has no
        name or spec.
    """
    spec = replica.spec
    metadata = replica.metadata
    if spec is None or metadata is None or not metadata.name:
        return None
    roles: tuple[RoleOccupancy, ...] = ()
    if spec.workers is not None and spec.poolName:
        roles = (role_occupancy(Role.UNIFIED, spec.poolName, spec.workers),)
    elif spec.workers is None and spec.prefill is not None and spec.decode is not None:
        roles = (
            role_occupancy(Role.PREFILL, spec.prefill.poolName, spec.prefill.workers),
            role_occupancy(Role.DECODE, spec.decode.poolName, spec.decode.workers),
        )
    namespace = metadata.namespace or ""
    deployment = DeploymentKey(namespace, spec.deploymentRef.name) if spec.deploymentRef is not None else None
    conditions = (replica.status.conditions or []) if replica.status is not None else []
    priority, priority_class = priority_of(metadata.annotations)
    return Occupancy(
        namespace=namespace,
        name=metadata.name,
        deployment=deployment,
        cluster=spec.inferenceClusterRef.name,
        roles=roles,
        # Whether it serves: a Ready condition from before its latest spec change still says so.
        ready=readiness(
            [entry_of(c) for c in conditions],
            metadata.generation,
            verdict=replica.status.readyVerdict if replica.status is not None else None,
        ).true,
        priority=priority,
        priority_class=priority_class,
        preemptible=preemptible_of(metadata.annotations),
    )
