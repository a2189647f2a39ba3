"""What the scheduler decided: placements, and why the replicas left over could not be placed."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum

from modelplane.capacity import DeploymentKey
from modelplane.scheduling.devices import PoolReason
from modelplane.topology import Footprint, Role

_SHOWN = 2  # clusters described in full per reason in a message; the rest are counted


class Reason(StrEnum):
    """Why a cluster was rejected for a replica, or why a replica has no placement.

    A replica's own reason is one of NoMatchingClusters (no selected cluster
    takes new replicas: none matches clusterSelector, or they are cordoned or
    not Ready), NoMatchingPools, CELError or InsufficientCapacity; Cordoned and
    NotReady only describe single clusters.
    """

    NO_MATCHING_CLUSTERS = "NoMatchingClusters"
    NO_MATCHING_POOLS = "NoMatchingPools"
    CEL_ERROR = "CELError"
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"
    CORDONED = "Cordoned"
    NOT_READY = "NotReady"


class Origin(StrEnum):
    """How a placement came about."""

    KEPT = "Kept"
    """The replica existed and stays where it is (sticky)."""
    NEW = "New"
    """A replica that did not exist."""
    MOVED = "Moved"
    """The replica existed, but its cluster or pool is gone, so it was placed again."""


@dataclass(frozen=True)
class RolePlacement:
    """One role of a placed replica: its pool and what it occupies there."""

    role: Role
    pool: str
    footprint: Footprint


@dataclass(frozen=True)
class Placement:
    """Where one replica runs.

    Attributes:
        replica: The ModelReplica's name.
        ordinal: Its ordinal.
        cluster: Its InferenceCluster.
        roles: Its roles (unified, or prefill then decode), each with a pool of ``cluster``.
        origin: Whether it was kept, new or moved.
        stale: For a kept replica, why its placement no longer satisfies the
            spec (clusterSelector, node selector or topology changed since it
            was placed); "" when it does. Stale replicas stay where they are,
            like Kubernetes' IgnoredDuringExecution: deleting one places it anew.
    """

    replica: str
    ordinal: int
    cluster: str
    roles: tuple[RolePlacement, ...]
    origin: Origin
    stale: str = ""

    def pool(self, role: Role) -> str | None:
        """The pool of ``role``, or None when the replica has no such role."""
        return next((r.pool for r in self.roles if r.role is role), None)


@dataclass(frozen=True)
class PoolRejection:
    """Why one pool does not take one role of a replica."""

    pool: str
    role: Role
    reason: PoolReason
    message: str


@dataclass(frozen=True)
class ClusterRejection:
    """Why one cluster selected by clusterSelector does not take a replica."""

    cluster: str
    reason: Reason
    message: str
    pools: tuple[PoolRejection, ...] = ()


@dataclass(frozen=True)
class Unplaced:
    """A replica the scheduler could not place.

    Attributes:
        replica: The ModelReplica's name.
        ordinal: Its ordinal.
        reason: Why, summarised.
        message: Why, with counts and the clusters' reasons.
        clusters: Clusters in the fleet.
        rejections: Every cluster that matches clusterSelector, with why it was rejected, by name.
    """

    replica: str
    ordinal: int
    reason: Reason
    message: str
    clusters: int
    rejections: tuple[ClusterRejection, ...]


@dataclass(frozen=True)
class Schedule:
    """The placements of one ModelDeployment's replicas.

    Attributes:
        deployment: The ModelDeployment.
        desired: Replicas wanted (``spec.replicas``).
        placements: Placed replicas, by ordinal.
        unplaced: Replicas without a placement, by ordinal.
        removed: Existing replicas that scaling down removes, in removal order.
        unmanaged: Existing replicas of the deployment whose names the scheduler
            did not give (never kept, moved or removed; their GPUs are counted).
    """

    deployment: DeploymentKey
    desired: int
    placements: tuple[Placement, ...]
    unplaced: tuple[Unplaced, ...]
    removed: tuple[str, ...]
    unmanaged: tuple[str, ...]

    @property
    def placed(self) -> int:
        """Replicas with a placement."""
        return len(self.placements)

    @property
    def complete(self) -> bool:
        """Whether every wanted replica has a placement."""
        return not self.unplaced

    @property
    def reason(self) -> Reason | None:
        """The reason of the first unplaced replica, or None when all are placed."""
        return self.unplaced[0].reason if self.unplaced else None

    @property
    def message(self) -> str:
        """A one-line summary, e.g. ``placed 2 of 3: llama-2: InsufficientCapacity: ...``."""
        head = f"placed {self.placed} of {self.desired}"
        if not self.unplaced:
            return head
        groups: dict[tuple[Reason, str], list[str]] = defaultdict(list)
        for u in self.unplaced:
            groups[u.reason, u.message].append(u.replica)
        parts = [f"{', '.join(names)}: {reason}: {message}" for (reason, message), names in groups.items()]
        return f"{head}: {'; '.join(parts)}"


def summarize(rejections: tuple[ClusterRejection, ...], clusters: int) -> tuple[Reason, str]:
    """The reason and message of an unplaced replica from its clusters' rejections."""
    head = f"{len(rejections)} of {clusters} clusters match clusterSelector"
    if not rejections:
        return Reason.NO_MATCHING_CLUSTERS, head
    by_reason: dict[Reason, list[ClusterRejection]] = defaultdict(list)
    for rejection in rejections:
        by_reason[rejection.reason].append(rejection)
    order = (
        Reason.INSUFFICIENT_CAPACITY,
        Reason.CEL_ERROR,
        Reason.NO_MATCHING_POOLS,
        Reason.NOT_READY,
        Reason.CORDONED,
    )
    parts = []
    for reason in order:
        group = by_reason.get(reason, [])
        if not group:
            continue
        shown = "; ".join(f"{r.cluster}: {r.message}" for r in group[:_SHOWN])
        more = f"; and {len(group) - _SHOWN} more" if len(group) > _SHOWN else ""
        parts.append(f"{len(group)} {reason} ({shown}{more})")
    first = next(r for r in order if r in by_reason)
    overall = Reason.NO_MATCHING_CLUSTERS if first in (Reason.NOT_READY, Reason.CORDONED) else first
    return overall, f"{head}: {', '.join(parts)}"
