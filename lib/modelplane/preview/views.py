"""What a function's output depends on, of a required resource it reads: its render stands while that stays.

The simulation re-renders an XR when an object it read changed (``modelplane.render.store.Reads``).
A cluster's capacity changes with every replica placed on it, and every ModelReplica on it reads the
cluster, though only for its spec, its name and where to reach it: a view keeps the version a reader
is told unchanged while the part it reads is (``modelplane.render.store.Catalog``).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from typing import Any

import pydantic

from modelplane.kinds import GROUP
from modelplane.render.store import View
from modelplane_models.inference_cluster import InferenceCluster

__all__ = ["VIEWS"]

# What compose-model-replica never reads of its InferenceCluster's status: it reads
# status.providerConfigRef and status.gateway (and the spec and name), and validates the whole.
_REPLICA_UNREAD_STATUS = frozenset({"capacity", "conditions"})


def _as_read(value: Mapping[str, Any]) -> Any:  # noqa: ANN401 - any JSON value
    """``value`` as a function reads it from a protobuf Struct: every number a float."""
    return json.loads(json.dumps(value), parse_int=float)


def replica_view_of_cluster(cluster: Mapping[str, Any]) -> Hashable:
    """What a ModelReplica's render depends on, of its InferenceCluster.

    The cluster without the status it never reads (capacity, conditions) or the version the
    server gives it, so long as the whole validates as the function validates it; else a view
    equal to no other (any change may change the error it reports).
    """
    try:
        InferenceCluster.model_validate(_as_read(cluster))
    except (pydantic.ValidationError, TypeError, ValueError):
        return object()  # not valid, or not JSON: equal to no other view, so every change counts
    meta = {k: v for k, v in (cluster.get("metadata") or {}).items() if k != "resourceVersion"}
    status = cluster.get("status")
    kept = (
        {k: v for k, v in status.items() if k not in _REPLICA_UNREAD_STATUS} if isinstance(status, Mapping) else status
    )
    return json.dumps({**cluster, "metadata": meta, "status": kept}, sort_keys=True)


# By the group and kind read, then the kind of the reader.
VIEWS: Mapping[tuple[str, str], Mapping[str, View]] = {
    (GROUP, "InferenceCluster"): {"ModelReplica": replica_view_of_cluster},
}
