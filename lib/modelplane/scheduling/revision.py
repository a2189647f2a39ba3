"""The revision of a serving shape: a short hash that changes exactly when the shape does.

A ModelDeployment's serving shape is what each of its ModelReplicas copies:
``nodeSelector`` and ``workers`` (unified), or those two under ``prefill`` and
``decode`` (disaggregated). Placement (cluster, pools) and the replica count are
not part of it. Every ModelReplica carries the revision of the shape it runs as a
label, so a replica that still runs an older shape can be told apart from one
that runs the current one (holding a bad change back; rolling a good one out).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

# The keys of a role's serving shape; a replica's role block also carries its pool.
SHAPE_KEYS = ("nodeSelector", "workers")
ROLE_KEYS = ("prefill", "decode")
# The ModelCache a deployment's replicas mount (the deployment's ref, and what each replica is written).
CACHE_REF_KEY = "modelCacheRef"
CACHE_KEY = "modelCache"
CACHE_KEYS = (CACHE_REF_KEY, CACHE_KEY)
DEFAULT_CACHE_POLICY = "Required"
_DIGITS = 10


def serving_shape(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The serving shape of a ModelDeployment's or a ModelReplica's ``spec`` (plain JSON values).

    Unified when ``spec`` has ``workers``, else disaggregated: each role's ``nodeSelector`` and
    ``workers``; and the ModelCache mounted, when there is one (``cache_mount``: a deployment's
    ``modelCacheRef`` with its defaults is a replica's ``modelCache``). Other fields (replicas,
    clusterSelector, the replica's cluster and pools) are left out.
    """
    shape: dict[str, Any]
    if "workers" in spec:
        shape = {k: spec[k] for k in SHAPE_KEYS if k in spec}
    else:
        shape = {}
        for role in ROLE_KEYS:
            block = spec.get(role)
            if isinstance(block, Mapping):
                shape[role] = {k: block[k] for k in SHAPE_KEYS if k in block}
    cache = next((spec[k] for k in CACHE_KEYS if isinstance(spec.get(k), Mapping)), None)
    if cache is not None:
        shape[CACHE_KEY] = cache_mount(cache)
    return shape


def cache_mount(ref: Mapping[str, Any]) -> dict[str, Any]:
    """A ``modelCacheRef`` (or a replica's ``modelCache``) with its defaults: mountPath ``/models/<name>``, Required."""
    name = str(ref.get("name") or "")
    return {
        "name": name,
        "mountPath": str(ref.get("mountPath") or f"/models/{name}"),
        "policy": str(ref.get("policy") or DEFAULT_CACHE_POLICY),
    }


def shape_revision(shape: Mapping[str, Any]) -> str:
    """A stable hash of ``shape`` (see ``serving_shape``): 10 hex digits, a valid label value.

    Whole floats hash as integers, so a shape read from a protobuf Struct (where
    every number is a float) and the same shape read from YAML agree.
    """
    text = json.dumps(_normal(shape), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:_DIGITS]


def _normal(value: Any) -> Any:  # noqa: ANN401 - any JSON value
    if isinstance(value, Mapping):
        return {str(k): _normal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
