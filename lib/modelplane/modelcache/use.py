"""How one replica uses its ModelCache: whether it mounts the copy on its cluster, and whether it waits for it.

A replica whose workloads already run is never changed for the cache's sake: it keeps the mount
it was composed with (or its absence) whatever the copy's phase, and whether the cache still
exists. A replica not started yet (no workload composed):

1. mounts the copy when it is Ready on its cluster;
2. otherwise, policy Required: waits, composing nothing (``CacheUse.waiting`` says why);
3. otherwise, policy Preferred: starts without the mount.

The claim is the cache's ``status.claimName`` (storage type PVC); a cache without one (NodeLocal,
or not observed yet) is mounted as its name says (``cache_claim_name``) only by a replica that was
mounted before; a new one does not mount it (``CacheUse.unmounted`` says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from modelplane.backends.model import CacheMount
from modelplane.modelcache.phase import Phase
from modelplane.names import cache_claim_name


class Policy(StrEnum):
    """``spec.modelCacheRef.policy``."""

    REQUIRED = "Required"
    PREFERRED = "Preferred"


@dataclass(frozen=True)
class CacheRef:
    """A replica's ``spec.modelCache``: the cache, where its copy is mounted, and the policy."""

    name: str
    mount_path: str
    policy: Policy = Policy.REQUIRED


@dataclass(frozen=True)
class CacheCopy:
    """The cache as its replica reads it: its claim ("" when none) and each cluster's phase and message."""

    claim: str
    clusters: Mapping[str, tuple[str, str]]

    @property
    def ready(self) -> frozenset[str]:
        """The clusters whose copy is Ready (``ready_clusters``)."""
        return ready_clusters(self.clusters)


@dataclass(frozen=True)
class CacheUse:
    """What the replica does: mount (None: no mount); waiting, why it composes nothing ("" when it does not wait).

    ``unmounted`` says why a replica that could have mounted the copy does not ("" otherwise).
    """

    mount: CacheMount | None
    waiting: str = ""
    unmounted: str = ""


def ready_clusters(copies: Mapping[str, tuple[str, str]]) -> frozenset[str]:
    """The clusters whose copy is Ready, from each cluster's (phase, message): where a new replica is placed first.

    The one reading of "Ready" the scheduler is given (``compose-model-deployment``) and
    ``preview --explain`` ranks by, so the two cannot disagree on it.
    """
    return frozenset(cluster for cluster, (phase, _) in copies.items() if phase == Phase.READY)


def copy_of(cache: Mapping[str, Any]) -> CacheCopy:
    """Read a ModelCache (as a dict) for its claim and its copies' phases; malformed entries are left out."""
    status = cache.get("status")
    status = status if isinstance(status, Mapping) else {}
    claim = status.get("claimName")
    clusters: dict[str, tuple[str, str]] = {}
    entries = status.get("clusters")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str) and isinstance(entry.get("phase"), str):
            clusters.setdefault(entry["name"], (entry["phase"], str(entry.get("message") or "")))
    return CacheCopy(claim if isinstance(claim, str) else "", clusters)


def cache_use(ref: CacheRef, copy: CacheCopy | None, cluster: str, *, started: bool, mounted: bool) -> CacheUse:
    """Decide how the replica on ``cluster`` uses its cache (see the module's rules).

    Args:
        ref: The replica's ``spec.modelCache``.
        copy: The ModelCache as read; None when it does not exist.
        cluster: The replica's cluster.
        started: Whether the replica's workloads are composed already.
        mounted: Whether they mount the cache's volume (read from what is composed).
    """
    claim = copy.claim if copy is not None and copy.claim else ""
    if started:
        # A running replica keeps its pods exactly as they are.
        return CacheUse(CacheMount(claim or cache_claim_name(ref.name), ref.mount_path) if mounted else None)
    phase, message = copy.clusters.get(cluster, (Phase.PENDING.value, "")) if copy is not None else ("", "")
    if copy is not None and phase == Phase.READY and claim:
        # 1. Ready here.
        return CacheUse(CacheMount(claim, ref.mount_path))
    if copy is None:
        why = f"spec.modelCache.name: ModelCache {ref.name} not found"
    elif phase == Phase.READY:
        why = f"ModelCache {ref.name} has no status.claimName (storage type NodeLocal mounts nothing)"
        return CacheUse(None, unmounted=why)
    else:
        why = f"ModelCache {ref.name}'s copy on {cluster} is {phase}" + (f": {message}" if message else "")
    if ref.policy is Policy.REQUIRED:
        # 2. Wait for the copy.
        return CacheUse(None, waiting=f"waiting for the weights: {why}")
    # 3. Start without it.
    return CacheUse(None, unmounted=f"{why}: starting without it (policy Preferred)")
