"""Where a replica runs: its cluster and pools, how it came there, its part in a rollout, and why it is held."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from modelplane.scheduling.decision import Decision
from modelplane.topology import Footprint, Role


class Origin(StrEnum):
    """How a placement came about."""

    KEPT = "Kept"
    """The replica existed and stays where it is (sticky)."""
    NEW = "New"
    """A replica that did not exist."""
    MOVED = "Moved"
    """The replica existed with the other kind of serving shape (unified or disaggregated), so it was placed again."""


class HoldReason(StrEnum):
    """Why an existing replica keeps its placement and spec exactly as they are.

    The first three say that an input the placement depends on is gone or cannot
    be read; the others that the deployment's changed shape cannot run where the
    replica runs, so the change is held back from it.
    """

    CLUSTER_GONE = "ClusterNotFound"
    """Its InferenceCluster is not in the fleet: deleted, or not listed (which cannot be told apart)."""
    CLUSTER_DELETING = "ClusterDeleting"
    """Its InferenceCluster is being deleted (the user's act): the replica is leaving."""
    CLUSTER_DRAINING = "ClusterDraining"
    """Its InferenceCluster drains (``spec.drain``): the replica is leaving, a wave at a time."""
    POOL_REMOVING = "PoolRemoving"
    """Its pool left its InferenceCluster's ``spec.nodePools`` and is kept until emptied: the replica is leaving."""
    PREEMPTED = "Preempted"
    """A higher priority takes its place (its FleetQuota says ``preemption: LowerPriority``): the replica is leaving."""
    CLUSTER_LOST = "ClusterLost"
    """Its InferenceCluster has been not Ready or absent longer than ``spec.failover.after``: replaced elsewhere."""
    OUTDATED = "Outdated"
    """It runs an older revision and waits for its wave of the rollout."""
    CLUSTER_UNREADABLE = "ClusterUnreadable"
    POOL_NOT_FOUND = "PoolNotFound"
    CLASS_NOT_FOUND = "ClassNotFound"
    INVALID_CLASS = "InvalidClass"
    CEL_ERROR = "CELError"
    SELECTOR_MISMATCH = "SelectorMismatch"
    DEVICES_MISSING = "DevicesMissing"
    TOPOLOGY_EXCEEDS_NODE = "TopologyExceedsNode"
    TOO_FEW_NODES = "TooFewNodes"
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"
    QUOTA_EXCEEDED = "QuotaExceeded"
    NO_MATCHING_POOLS = "NoMatchingPools"
    NO_MATCHING_CLUSTERS = "NoMatchingClusters"

    @property
    def input_missing(self) -> bool:
        """Whether an input is gone or unreadable (rather than the new shape not fitting)."""
        return self in _INPUT_MISSING


_INPUT_MISSING = frozenset(
    {
        HoldReason.CLUSTER_GONE,
        HoldReason.CLUSTER_UNREADABLE,
        HoldReason.POOL_NOT_FOUND,
        HoldReason.CLASS_NOT_FOUND,
        HoldReason.INVALID_CLASS,
    }
)


_LEAVING = frozenset(
    {HoldReason.CLUSTER_DELETING, HoldReason.CLUSTER_DRAINING, HoldReason.POOL_REMOVING, HoldReason.PREEMPTED}
)


@dataclass(frozen=True)
class Held:
    """Why an existing replica keeps its observed spec (placement and serving shape) unchanged.

    Attributes:
        reason: Why.
        message: Why, naming the input that is gone or unreadable, or the field of
            the spec that cannot run on the replica's pool.
    """

    reason: HoldReason
    message: str

    @property
    def leaving(self) -> bool:
        """Whether its cluster (or its pool) is going away, or it gives way: it is replaced elsewhere, then retired."""
        return self.reason in _LEAVING

    @property
    def preempted(self) -> bool:
        """Whether it gives way to a higher priority: leaving, retired within the rollout's budget."""
        return self.reason is HoldReason.PREEMPTED

    @property
    def lost(self) -> bool:
        """Whether its cluster is lost past the failover grace: it is replaced elsewhere and kept."""
        return self.reason is HoldReason.CLUSTER_LOST


class State(StrEnum):
    """A placement's part in a rollout, a drain or a failover (``status.placements[].state``)."""

    CURRENT = "Current"
    OUTDATED = "Outdated"
    UPDATING = "Updating"
    SURGE = "Surge"
    LEAVING = "Leaving"
    LOST = "Lost"
    HELD = "Held"


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
            spec (clusterSelector, or a class that changed under an unchanged
            shape); "" when it does. Stale replicas stay where they are, like
            Kubernetes' IgnoredDuringExecution: deleting one places it anew.
        held: For a kept replica that keeps its observed spec unchanged (its
            placement and its previous serving shape), why; None when it takes
            the deployment's shape. ``roles`` then hold what it runs.
        state: Its part in a rollout, a drain or a failover.
        replaces: For a replacement of a replica whose cluster is lost, that replica's name.
        decision: For a replica placed by this run (new, or placed again), why this
            cluster won; None for a kept one (its reason was recorded when it was placed).
        preempts: Placed by this run where nothing had room, in the place of replicas of a lower
            priority not serving yet (their cluster finds them beyond its capacity, and their
            deployments move them).
        preempts_serving: Placed by this run where nothing had room even so, in the place of serving
            replicas of a lower priority whose FleetQuota allows ``preemption: LowerPriority``: their
            cluster lists them in ``status.capacity.preempted``, their deployments move them surge-first,
            and this replica waits for their GPUs.
    """

    replica: str
    ordinal: int
    cluster: str
    roles: tuple[RolePlacement, ...]
    origin: Origin
    stale: str = ""
    held: Held | None = None
    state: State = State.CURRENT
    replaces: str = ""
    decision: Decision | None = None
    preempts: bool = False
    preempts_serving: bool = False

    def pool(self, role: Role) -> str | None:
        """The pool of ``role``, or None when the replica has no such role."""
        return next((r.pool for r in self.roles if r.role is role), None)
