"""The deployment's ModelCache (``spec.modelCacheRef``): one resource, asked for by name in its namespace.

Read for ``status.clusters[]``: where its copy is Ready (new replicas prefer those clusters) and each
other copy's phase (a replica there waits with policy Required). O(the cache's clusters), once a call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import protojson
from modelplane.capacity import DeploymentKey
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.structs import string_at
from modelplane.kinds import API_VERSION
from modelplane.modelcache.use import copy_of, ready_clusters
from modelplane.modelcache.work import StorageType

CACHE = Requirement("cache", API_VERSION, "ModelCache")


@dataclass(frozen=True)
class Cache:
    """The referenced ModelCache as read.

    Attributes:
        name: ``spec.modelCacheRef.name``.
        found: Whether it exists.
        phases: Each cluster's copy: its phase and message.
        node_local: Whether its storage type is NodeLocal (KServe serves the copy at ``nodelocal.SERVED_PATH``).
    """

    name: str
    found: bool
    phases: dict[str, tuple[str, str]] = field(default_factory=dict)
    node_local: bool = False

    @property
    def ready(self) -> frozenset[str]:
        """The clusters whose copy is Ready (the scheduler's ``cached``; ``preview --explain`` reads it alike)."""
        return ready_clusters(self.phases)


def cache_ref(req: fnv1.RunFunctionRequest) -> str:
    """``spec.modelCacheRef.name`` as observed ("" without one)."""
    return string_at(req.observed.composite.resource, "spec", "modelCacheRef", "name") or ""


def request_cache(rsp: fnv1.RunFunctionResponse, key: DeploymentKey, name: str) -> None:
    """Ask for the ModelCache ``name`` in the deployment's namespace (needed on every call)."""
    if name and key.namespace:
        CACHE.request(rsp, name=name, namespace=key.namespace)


def read_cache(req: fnv1.RunFunctionRequest, name: str) -> Cache:
    """The ModelCache ``name`` as fetched (not found: ``found`` False)."""
    found = CACHE.first(req)
    if found is None:
        return Cache(name, found=False)
    copy = copy_of(protojson.struct_to_dict(found))
    return Cache(name, found=True, phases=dict(copy.clusters), node_local=copy.storage is StorageType.NODE_LOCAL)
