"""The replica's ModelCache: read it (by name, in the replica's namespace) and decide how the replica uses it.

What the replica composed before says whether it started (any workload composed), whether its pods
mount the cache's volume and which KServe ``spec.model.uri`` its LLMInferenceService was composed with
(a NodeLocal copy's): a running replica's pods never change for the cache's sake
(``modelplane.modelcache.use``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane import protojson
from modelplane.backends.pods import CACHE_VOLUME
from modelplane.fnkit.required import Requirement
from modelplane.kinds import API_VERSION
from modelplane.modelcache.use import KSERVE, CacheRef, CacheUse, Policy, cache_use, copy_of
from modelplane.names import PODS_KEY

CACHE = Requirement("cache", API_VERSION, "ModelCache")


def read_cache(
    req: fnv1.RunFunctionRequest, spec: Mapping[str, Any], *, cluster_name: str, backend: str = KSERVE
) -> CacheUse:
    """How the replica uses ``spec.modelCache`` (no mount when it has none); the cache must be fetched."""
    written = spec.get("modelCache")
    if not isinstance(written, Mapping):
        return CacheUse(None)
    ref = CacheRef(str(written["name"]), str(written["mountPath"]), Policy(written.get("policy") or "Required"))
    found = CACHE.first(req)
    copy = copy_of(protojson.struct_to_dict(found)) if found is not None else None
    composed = [r.resource for k, r in req.observed.resources.items() if k != PODS_KEY]
    manifests = [m for m in (_manifest(r) for r in composed) if m is not None]
    mounted = any(_has_volume(m) for m in manifests)
    served = next((u for u in (_model_uri(m) for m in manifests) if u), "")
    return cache_use(ref, copy, cluster_name, started=bool(composed), mounted=mounted, served=served, backend=backend)


def _manifest(struct: structpb.Struct) -> dict[str, Any] | None:
    """A composed Object's manifest, as composed (None without one)."""
    spec = struct.fields.get("spec")
    if spec is None or not spec.HasField("struct_value"):
        return None
    provider = spec.struct_value.fields.get("forProvider")
    manifest = provider.struct_value.fields.get("manifest") if provider is not None else None
    if manifest is None or not manifest.HasField("struct_value"):
        return None
    return protojson.struct_to_dict(manifest.struct_value)


def _model_uri(manifest: Mapping[str, Any]) -> str:
    """An LLMInferenceService's ``spec.model.uri`` ("" for another kind, or none)."""
    if manifest.get("kind") != "LLMInferenceService":
        return ""
    spec = manifest.get("spec")
    model = spec.get("model") if isinstance(spec, Mapping) else None
    uri = model.get("uri") if isinstance(model, Mapping) else None
    return uri if isinstance(uri, str) else ""


def _has_volume(value: Any) -> bool:  # noqa: ANN401 - any JSON value
    if isinstance(value, Mapping):
        if value.get("name") == CACHE_VOLUME and "persistentVolumeClaim" in value:
            return True
        return any(_has_volume(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_volume(v) for v in value)
    return False
