"""How one replica uses its ModelCache: whether it mounts the copy on its cluster, and whether it waits for it.

A replica whose workloads already run is never changed for the cache's sake: it keeps the mount
it was composed with (or its absence), and the KServe ``spec.model.uri`` it was composed with (or
its absence), whatever the copy's phase, and whether the cache still exists. A replica not started
yet (no workload composed):

1. uses the copy when it is Ready on its cluster: storage type PVC mounts the cache's
   ``status.claimName``; storage type NodeLocal mounts nothing of its own and sets KServe's
   ``spec.model.uri`` to the LocalModelCache's ``sourceModelUri`` (KServe serves the node-local
   copy to an LLMInferenceService whose URI matches, at ``nodelocal.SERVED_PATH``);
2. otherwise, policy Required: waits, composing nothing (``CacheUse.waiting`` says why);
3. otherwise, policy Preferred: starts without it (``CacheUse.unmounted`` says why).

A NodeLocal cache on a cluster that does not serve with KServe is never Ready there (its copy is
Failed): such a replica waits or starts without it as in 2 and 3, and the message says why. A PVC
cache Ready without a ``status.claimName`` (not observed yet) is not mounted by a new replica.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pydantic

from modelplane.backends.model import CacheMount
from modelplane.modelcache.nodelocal import NodeLocalSourceError, source_uri
from modelplane.modelcache.phase import Phase
from modelplane.modelcache.work import StorageType, sources
from modelplane.names import cache_claim_name
from modelplane_models.model_cache import Spec

# The backend that serves a NodeLocal copy (InferenceCluster spec.serving.backend; unset means KServe).
KSERVE = "KServe"


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
    """The cache as its replica reads it.

    Attributes:
        claim: ``status.claimName`` ("" when none).
        clusters: Each cluster's phase and message.
        storage: ``spec.storage.type``.
        model_uri: NodeLocal: the LocalModelCache's ``sourceModelUri`` ("" when it cannot be derived).
        problem: NodeLocal: why ``model_uri`` cannot be derived ("" otherwise).
    """

    claim: str
    clusters: Mapping[str, tuple[str, str]]
    storage: StorageType = StorageType.PVC
    model_uri: str = ""
    problem: str = ""

    @property
    def ready(self) -> frozenset[str]:
        """The clusters whose copy is Ready (``ready_clusters``)."""
        return ready_clusters(self.clusters)


@dataclass(frozen=True)
class CacheUse:
    """What the replica does: mount (None: no mount); waiting, why it composes nothing ("" when it does not wait).

    ``model_uri`` is KServe's ``spec.model.uri`` that serves a NodeLocal copy ("" for none).
    ``unmounted`` says why a replica that could have used the copy does not ("" otherwise).
    """

    mount: CacheMount | None
    waiting: str = ""
    unmounted: str = ""
    model_uri: str = ""


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
    storage, model_uri, problem = _storage(cache.get("spec"))
    return CacheCopy(claim if isinstance(claim, str) else "", clusters, storage, model_uri, problem)


def _storage(spec: Any) -> tuple[StorageType, str, str]:  # noqa: ANN401 - the spec as read, any JSON value
    """The storage type, and for NodeLocal the URI KServe serves the copy at (or why there is none)."""
    if not isinstance(spec, Mapping):
        return StorageType.PVC, "", ""
    storage = spec.get("storage")
    kind = storage.get("type") if isinstance(storage, Mapping) else None
    if kind != StorageType.NODE_LOCAL:
        return StorageType.PVC, "", ""
    try:
        found = sources(Spec.model_validate(spec))
        if len(found) != 1:
            return StorageType.NODE_LOCAL, "", "spec.source must set exactly one of huggingFace, s3, http or oci"
        # The same function compose-model-cache writes the LocalModelCache's sourceModelUri with.
        return StorageType.NODE_LOCAL, source_uri(found[0]), ""
    except pydantic.ValidationError as err:
        return StorageType.NODE_LOCAL, "", f"its spec is invalid ({err.error_count()} error(s))"
    except NodeLocalSourceError as err:
        return StorageType.NODE_LOCAL, "", str(err)


def cache_use(  # noqa: PLR0913 - the replica's view of its cache, each input named
    ref: CacheRef,
    copy: CacheCopy | None,
    cluster: str,
    *,
    started: bool,
    mounted: bool,
    served: str = "",
    backend: str = KSERVE,
) -> CacheUse:
    """Decide how the replica on ``cluster`` uses its cache (see the module's rules).

    Args:
        ref: The replica's ``spec.modelCache``.
        copy: The ModelCache as read; None when it does not exist.
        cluster: The replica's cluster.
        started: Whether the replica's workloads are composed already.
        mounted: Whether they mount the cache's volume (read from what is composed).
        served: The ``spec.model.uri`` they were composed with ("" for none; read from what is composed).
        backend: The cluster's ``spec.serving.backend``.
    """
    claim = copy.claim if copy is not None and copy.claim else ""
    if started:
        # A running replica keeps its pods exactly as they are.
        mount = CacheMount(claim or cache_claim_name(ref.name), ref.mount_path) if mounted else None
        return CacheUse(mount, model_uri=served)
    phase, message = copy.clusters.get(cluster, (Phase.PENDING.value, "")) if copy is not None else ("", "")
    node_local = copy is not None and copy.storage is StorageType.NODE_LOCAL
    if copy is None:
        why = f"spec.modelCache.name: ModelCache {ref.name} not found"
    elif node_local and (backend or KSERVE) != KSERVE:
        why = (
            f"spec.modelCacheRef: ModelCache {ref.name} has storage type NodeLocal, which needs a KServe cluster;"
            f" InferenceCluster {cluster} serves with {backend}"
        )
    elif node_local and not copy.model_uri:
        why = f"spec.modelCacheRef: ModelCache {ref.name}'s node-local copy cannot be served: {copy.problem}"
    elif phase == Phase.READY and node_local:
        # 1. Ready here: KServe serves the node-local copy to the URI its LocalModelCache holds.
        return CacheUse(None, model_uri=copy.model_uri)
    elif phase == Phase.READY and claim:
        # 1. Ready here: mount the claim.
        return CacheUse(CacheMount(claim, ref.mount_path))
    elif phase == Phase.READY:
        why = f"ModelCache {ref.name} has no status.claimName yet"
        return CacheUse(None, unmounted=f"{why}: starting without it")
    else:
        why = f"ModelCache {ref.name}'s copy on {cluster} is {phase}" + (f": {message}" if message else "")
    if ref.policy is Policy.REQUIRED:
        # 2. Wait for the copy.
        return CacheUse(None, waiting=f"waiting for the weights: {why}")
    # 3. Start without it.
    return CacheUse(None, unmounted=f"{why}: starting without it (policy Preferred)")
