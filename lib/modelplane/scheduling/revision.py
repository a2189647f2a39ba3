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
_DIGITS = 10


def serving_shape(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The serving shape of a ModelDeployment's or a ModelReplica's ``spec`` (plain JSON values).

    Unified when ``spec`` has ``workers``, else disaggregated: each role's
    ``nodeSelector`` and ``workers``. Other fields (replicas, clusterSelector,
    the replica's cluster and pools) are left out.
    """
    if "workers" in spec:
        return {k: spec[k] for k in SHAPE_KEYS if k in spec}
    shape: dict[str, Any] = {}
    for role in ROLE_KEYS:
        block = spec.get(role)
        if isinstance(block, Mapping):
            shape[role] = {k: block[k] for k in SHAPE_KEYS if k in block}
    return shape


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
