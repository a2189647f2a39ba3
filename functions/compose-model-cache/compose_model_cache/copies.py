"""One cluster's copy of a cache: the objects composed there, and the copy's state from what they report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.fnkit import inputs
from modelplane.layout import CONDITION
from modelplane.modelcache import claim, nodelocal
from modelplane.modelcache.phase import CopyState, Phase, job_state, node_local_state
from modelplane.modelcache.work import CacheWork, StorageType
from modelplane.names import HYDRATION_RETRY_ANNOTATION, cache_key_cluster
from modelplane.remote import observed_manifest

# The parts of a copy that hold the weights: kept while a replica on the cluster may mount them.
HOLDS_WEIGHTS = frozenset({"pvc", "nodegroup", "localmodelcache"})
_JOB = "job-"
# What is read of an observed Object: the remote Job or LocalModelCache as the workload cluster reports it.
_REMOTE = {
    "status": {
        "atProvider": {
            "manifest": {
                "kind": str,
                "metadata": {"name": str},
                "status": {
                    "conditions": [CONDITION],
                    "active": int,
                    "failed": int,
                    "startTime": str,
                    "completionTime": str,
                    "copies": {"total": int, "available": int, "failed": int},
                },
            }
        }
    }
}
# Which state is best among several observed (a kept cluster may show an old Job and a new one).
_RANK = {Phase.READY: 3, Phase.HYDRATING: 2, Phase.FAILED: 1, Phase.PENDING: 0}


@dataclass(frozen=True)
class Part:
    """One remote object of a copy: the part of its composition key, and the manifest."""

    part: str
    manifest: dict[str, Any]


def parts(work: CacheWork, pools: Iterable[str]) -> list[Part]:
    """The remote objects of a copy on a cluster whose node pools are ``pools``.

    Raises:
        NodeLocalSourceError: storage NodeLocal with a source KServe cannot read.
    """
    if work.storage == StorageType.NODE_LOCAL:
        return [
            Part("nodegroup", nodelocal.node_group(work, list(pools))),
            Part("localmodelcache", nodelocal.local_model_cache(work)),
        ]
    job = claim.hydration_job(work)
    digest = job["metadata"]["name"].rsplit("-", 1)[-1]
    return [
        Part("namespace", claim.namespace(work)),
        Part("pvc", claim.claim(work)),
        Part(f"{_JOB}{digest}", job),
    ]


def part_of(key: str) -> str:
    """The part a composition key names (``<cluster label>.<part>``)."""
    return key.split(".", 1)[1] if cache_key_cluster(key) is not None else ""


def remote(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, key: str) -> Mapping[str, Any] | None:
    """The remote object under ``key`` as provider-kubernetes last observed it (None when not yet)."""
    found = inputs.observed(req, rsp, key, _REMOTE)
    return observed_manifest(found) if found is not None else None


def missing_secret(work: CacheWork, cluster: str) -> str:
    """What the hydration Job's failed Secret check on ``cluster`` means, naming the field ("" for no Secret)."""
    check = claim.secret_check(work.source) if work.storage == StorageType.PVC else None
    if check is None:
        return ""
    keys = f"key{'s' if len(check.keys) > 1 else ''} {', '.join(check.keys)}"
    return (
        f"{check.field}: Secret {check.secret} ({keys}) not found in namespace {work.namespace}"
        f" on InferenceCluster {cluster}; create it there, then set a new value of the annotation"
        f" {HYDRATION_RETRY_ANNOTATION} on the ModelCache to hydrate again"
    )


def state_of(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, key: str, name: str = "", secret: str = ""
) -> CopyState | None:
    """The copy's state from the observed Job or LocalModelCache ``name`` under ``key`` (None for another part).

    ``secret`` is what the Job's failed Secret check means (``missing_secret``).
    """
    part = part_of(key)
    manifest = remote(req, rsp, key)
    name = name or str((manifest or {}).get("metadata", {}).get("name", "")) or key
    if part.startswith(_JOB):
        return job_state(manifest, name, secret)
    if part == "localmodelcache":
        return node_local_state(manifest, name)
    return None


def best_observed(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, keys: Iterable[str]) -> CopyState:
    """The furthest state any observed Job or LocalModelCache of a copy reports (Pending when none is observed)."""
    states = [s for s in (state_of(req, rsp, k) for k in sorted(keys)) if s is not None]
    return max(states, key=lambda s: _RANK[s.phase], default=CopyState(Phase.PENDING, "nothing observed yet"))
