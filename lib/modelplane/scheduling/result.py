"""What the scheduler decided: placements, and why the replicas left over could not be placed."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum

from modelplane.capacity import DeploymentKey
from modelplane.scheduling.decision import Decision
from modelplane.scheduling.devices import PoolReason
from modelplane.topology import Footprint, Role

_SHOWN = 2  # clusters described in full per reason in a message; the rest are counted
LISTED = 16
"""Unplaced replicas listed one by one; the others are counted (``spec.replicas`` is a user's number)."""


class RejectReason(StrEnum):
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
        """Whether its cluster is being deleted: it is replaced elsewhere, then retired."""
        return self.reason in (HoldReason.CLUSTER_DELETING, HoldReason.CLUSTER_DRAINING)

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
    reason: RejectReason
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
    reason: RejectReason
    message: str
    clusters: int
    rejections: tuple[ClusterRejection, ...]


@dataclass(frozen=True)
class Pending:
    """A replica of a rollout or a drain that fits once GPUs this deployment releases are free.

    The replicas it waits for were retired (or removed) by this call or an earlier one and still
    hold their GPUs; the replica is placed on the next call after they are gone. Progress, not a
    scheduling failure.

    Attributes:
        replica: The ModelReplica's name.
        ordinal: Its ordinal.
        cluster: Where it fits once they are released.
        releasing: The replicas whose GPUs it waits for, on that cluster, by name.
    """

    replica: str
    ordinal: int
    cluster: str
    releasing: tuple[str, ...]


@dataclass(frozen=True)
class Schedule:
    """The placements of one ModelDeployment's replicas.

    Attributes:
        deployment: The ModelDeployment.
        desired: Replicas wanted (``spec.replicas``).
        placements: Replicas that are composed, by ordinal: placed, kept, and
            leaving ones (held because their cluster is being deleted) until they are retired.
        unplaced: The first replicas without a placement (at most ``LISTED``), by ordinal.
        removed: Existing replicas that scaling down removes, in removal order.
        unmanaged: Existing replicas of the deployment whose names the scheduler
            did not give (never kept, moved or removed; their GPUs are counted).
        shortfall: Wanted replicas without a placement (``len(unplaced)`` or more).
        retired: Replicas retired now: they were leaving (their cluster drains or is
            being deleted) or ran an older revision, and enough replicas are Ready without them.
        waiting: Replicas beyond ``spec.replicas`` that scaling down leaves in place
            for now, because which to remove depends on an input that cannot be read or
            a replica that does not say whether it is Ready (retirements wait alike).
        rollout: Where a rollout, a drain or a failover stands (None without a revision).
        pending: Replicas that fit once GPUs this deployment releases are free (not unplaced).
        serving: The existing replicas observed Ready, by name.
    """

    deployment: DeploymentKey
    desired: int
    placements: tuple[Placement, ...]
    unplaced: tuple[Unplaced, ...]
    removed: tuple[str, ...]
    unmanaged: tuple[str, ...]
    shortfall: int = 0
    retired: tuple[str, ...] = ()
    waiting: int = 0
    rollout: Rollout | None = None
    pending: tuple[Pending, ...] = ()
    serving: frozenset[str] = frozenset()
    moved: tuple[tuple[str, str, str], ...] = ()  # (replica, from, to): off a cluster it overcommitted

    @property
    def placed(self) -> int:
        """Wanted replicas placed or serving, at most ``desired``.

        A replica counts when it is placed to stay (current, surge, held or of an
        older revision) or, while it is leaving or lost, as long as it serves.
        """
        return min(
            self.desired,
            sum(1 for p in self.placements if p.state in _PLACED or p.replica in self.serving),
        )

    @property
    def leaving(self) -> tuple[str, ...]:
        """Replicas whose cluster drains or is being deleted, still composed, by ordinal."""
        return tuple(p.replica for p in self.placements if p.state is State.LEAVING)

    @property
    def lost(self) -> tuple[str, ...]:
        """Replicas kept on a lost cluster, by ordinal."""
        return tuple(p.replica for p in self.placements if p.state is State.LOST)

    @property
    def complete(self) -> bool:
        """Whether every wanted replica has a placement."""
        return not self.shortfall

    @property
    def reason(self) -> RejectReason | None:
        """The reason of the first unplaced replica, or None when all are placed."""
        return self.unplaced[0].reason if self.unplaced else None

    @property
    def held(self) -> tuple[Placement, ...]:
        """The placements kept with their observed spec, by ordinal."""
        return tuple(p for p in self.placements if p.held is not None)

    @property
    def message(self) -> str:
        """A one-line summary, e.g. ``placed 2 of 3: llama-2: InsufficientCapacity: ...``.

        Leaving and lost replicas are said apart: ``placed 3 of 3 (2 leaving: llm-0, llm-2)``.
        """
        head = f"placed {self.placed} of {self.desired}"
        moving = [
            f"{len(names)} {what}: {', '.join(names)}"
            for what, names in (("leaving", self.leaving), ("lost", self.lost))
            if names
        ]
        if moving:
            head += f" ({'; '.join(moving)})"
        if not self.unplaced:
            return head
        groups: dict[tuple[RejectReason, str], list[str]] = defaultdict(list)
        for u in self.unplaced:
            groups[u.reason, u.message].append(u.replica)
        more = self.shortfall - len(self.unplaced)
        parts = []
        for i, ((reason, message), names) in enumerate(groups.items()):
            listed = ", ".join(names) + (f" and {more} more" if more > 0 and i == len(groups) - 1 else "")
            parts.append(f"{listed}: {reason}: {message}")
        return f"{head}: {'; '.join(parts)}"


_PLACED = frozenset({State.CURRENT, State.UPDATING, State.SURGE, State.HELD, State.OUTDATED})


@dataclass(frozen=True)
class Rollout:
    """Where a rollout stands after this call.

    Attributes:
        revision: The revision replicas move to.
        updated: Replicas of that revision (Ready or not), in-place updates of this call included.
        outdated: Replicas of an older revision that stay for now, by ordinal.
        leaving: Replicas that stay for now although their cluster drains or is being deleted.
        lost: Replicas kept on a lost cluster while replacements run elsewhere.
        waiting: Replicas of the current revision that are not Ready yet (the rollout waits for them).
        retired_old: Replicas of an older revision retired now.
        retired_draining: Replicas retired now because their cluster drains.
        pending: Replicas that wait for GPUs this deployment releases, each with whose (see ``Pending``).
        blocked: Why leaving replicas cannot move ("" when they can, or none is leaving).
        fallback: Why the rollout updates in place one at a time ("" when it surges as configured).
        paused: Whether ``spec.paused`` holds the rollout.
    """

    revision: str
    updated: int
    outdated: tuple[str, ...] = ()
    leaving: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    retired_old: tuple[str, ...] = ()
    retired_draining: tuple[str, ...] = ()
    fallback: str = ""
    paused: bool = False
    pending: tuple[Pending, ...] = ()
    blocked: str = ""

    @property
    def complete(self) -> bool:
        """Whether every replica runs the current revision where it should, none waiting."""
        return not (self.outdated or self.leaving or self.waiting or self.pending)


def pool_message(role: Role, pool: str, message: str, roles: int) -> str:
    """``pool <pool>: <message>``, naming the role when the replica has more than one."""
    return f"{'' if roles == 1 else f'{role} '}pool {pool}: {message}"


def summarize(rejections: tuple[ClusterRejection, ...], clusters: int) -> tuple[RejectReason, str]:
    """The reason and message of an unplaced replica from its clusters' rejections."""
    head = f"{len(rejections)} of {clusters} clusters match clusterSelector"
    if not rejections:
        return RejectReason.NO_MATCHING_CLUSTERS, head
    by_reason: dict[RejectReason, list[ClusterRejection]] = defaultdict(list)
    for rejection in rejections:
        by_reason[rejection.reason].append(rejection)
    order = (
        RejectReason.INSUFFICIENT_CAPACITY,
        RejectReason.CEL_ERROR,
        RejectReason.NO_MATCHING_POOLS,
        RejectReason.NOT_READY,
        RejectReason.CORDONED,
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
    overall = RejectReason.NO_MATCHING_CLUSTERS if first in (RejectReason.NOT_READY, RejectReason.CORDONED) else first
    return overall, f"{head}: {', '.join(parts)}"
