"""Why a replica could not be placed: each pool's and each cluster's reason, and the replica's.

``summarize`` turns the clusters' rejections into the replica's reason and one
message; ``pool_message`` is how a message names a pool (and a role, when the
replica has several).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum

from modelplane.scheduling.devices import PoolReason
from modelplane.topology import Role

_SHOWN = 2  # clusters described in full per reason in a message; the rest are counted
LISTED = 16
"""Unplaced replicas listed one by one; the others are counted (``spec.replicas`` is a user's number)."""


class RejectReason(StrEnum):
    """Why a cluster was rejected for a replica, or why a replica has no placement.

    A replica's own reason is one of NoMatchingClusters (no selected cluster
    takes new replicas: none matches clusterSelector, or they are cordoned, not
    Ready, or lack a serving-stack component the replica needs), NoMatchingPools,
    CELError, InsufficientCapacity or QuotaExceeded (a cluster has room, but a
    FleetQuota of the namespace has not); Cordoned, NotReady and ComponentMissing
    only describe single clusters.
    """

    NO_MATCHING_CLUSTERS = "NoMatchingClusters"
    NO_MATCHING_POOLS = "NoMatchingPools"
    CEL_ERROR = "CELError"
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"
    QUOTA_EXCEEDED = "QuotaExceeded"
    CORDONED = "Cordoned"
    NOT_READY = "NotReady"
    COMPONENT_MISSING = "ComponentMissing"


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
        RejectReason.COMPONENT_MISSING,
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
    quota = by_reason.get(RejectReason.QUOTA_EXCEEDED, [])
    if quota:
        # Clusters have room but a quota has not: the quota is the answer, said once (not once per cluster).
        said = "; ".join(dict.fromkeys(r.message for r in quota))
        others = ", ".join(f"{len(by_reason[r])} {r}" for r in order if r in by_reason)
        return RejectReason.QUOTA_EXCEEDED, f"{said} (other clusters: {others})" if others else said
    first = next(r for r in order if r in by_reason)
    unavailable = (RejectReason.NOT_READY, RejectReason.CORDONED, RejectReason.COMPONENT_MISSING)
    overall = RejectReason.NO_MATCHING_CLUSTERS if first in unavailable else first
    return overall, f"{head}: {', '.join(parts)}"
