"""Which clusters keep a copy of a cache, and which copies stay because a replica uses them.

1. The targets: the clusters ``spec.clusterSelector`` selects and, under placement Follow, the
   clusters of the replicas that use the cache.
2. A copy observed on a cluster that is no longer a target is kept while a replica that uses the
   cache runs there, while a replica that may use it cannot be read, or while the cluster itself is
   not listed or cannot be read (an input lost is not a reason): never drop a copy in use.
3. Any other copy off the targets is removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass
from enum import StrEnum

from modelplane.names import cluster_label


class Placement(StrEnum):
    """Which clusters keep a copy (``spec.placement``)."""

    FOLLOW = "Follow"
    STATIC = "Static"


@dataclass(frozen=True)
class User:
    """A ModelReplica that uses the cache, and the InferenceCluster it is placed on."""

    replica: str
    cluster: str


@dataclass(frozen=True)
class Kept:
    """A copy off the targets kept as it is: its cluster's label and name, and why."""

    label: str
    cluster: str
    why: str


@dataclass(frozen=True)
class Targets:
    """Where the cache composes copies, which copies it keeps unchanged, and which it removes (cluster labels)."""

    clusters: tuple[str, ...]
    kept: tuple[Kept, ...]
    removed: tuple[str, ...]


def targets(
    placement: Placement,
    selected: Iterable[str],
    users: Iterable[User],
    unreadable: Iterable[str],
    observed: Set[str],
    readable: Set[str],
) -> Targets:
    """Decide where the cache keeps copies.

    Args:
        placement: ``spec.placement``.
        selected: The InferenceClusters ``spec.clusterSelector`` selects.
        users: The readable ModelReplicas that use the cache.
        unreadable: The ModelReplicas labelled with the cache that cannot be read (their cluster is unknown).
        observed: The cluster labels (``cluster_label``) of the copies observed now.
        readable: The cluster labels of the InferenceClusters listed and read whole.
    """
    users = sorted(users, key=lambda u: (u.cluster, u.replica))
    unreadable = sorted(unreadable)
    # 1. The targets.
    clusters = set(selected)
    if placement == Placement.FOLLOW:
        clusters |= {u.cluster for u in users}
    composed = {cluster_label(c) for c in clusters}
    # 2. A copy in use, or maybe in use, stays.
    kept, removed = [], []
    for label in sorted(observed - composed):
        using = [u for u in users if cluster_label(u.cluster) == label]
        if using:
            names = ", ".join(u.replica for u in using)
            why = f"kept: replica {names} mounts it" if len(using) == 1 else f"kept: replicas {names} mount it"
            kept.append(Kept(label, using[0].cluster, why))
        elif unreadable:
            why = f"kept: ModelReplica {', '.join(unreadable)} cannot be read, so it may mount it"
            kept.append(Kept(label, label, why))
        elif label not in readable:
            kept.append(Kept(label, label, f"kept: InferenceCluster {label} is not listed or cannot be read"))
        else:
            # 3. Nothing uses it.
            removed.append(label)
    return Targets(tuple(sorted(clusters)), tuple(kept), tuple(removed))
