"""The KAI scheduler adapter: a ``Queue``'s status as a capacity snapshot.

A KAI ``Queue`` (``scheduling.run.ai/v2``) reports in ``status.allocated`` the
resources its running pods hold, by resource name, and carries its GPU quota
in ``spec.resources.gpu.quota`` (-1: unlimited).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from modelplane.capacity.observed import Source
from modelplane.capacity.snapshot import Figure, Snapshot, gpus, is_gpu
from modelplane.shapes import METADATA, Shape

QUEUE_API_VERSION = "scheduling.run.ai/v2"
_NUMBER = (str, int, float)
# What the adapter reads of a Queue: objects are conformed to it where they are read.
QUEUE: Shape = {
    "kind": str,
    "metadata": METADATA,
    "spec": {"resources": {"gpu": {"quota": (int, float)}}},
    "status": {"allocated": {str: _NUMBER}},
}


def kai_snapshot(objects: Sequence[Mapping[str, Any]], device_classes: Iterable[str] = ()) -> Snapshot:
    """Read the KAI Queue among ``objects``.

    Args:
        objects: The scheduler's status objects as observed on the cluster (the Queue), conformed to ``QUEUE``.
        device_classes: DRA device classes that count as GPUs besides ``nvidia.com/gpu``.

    Returns:
        The snapshot; not known when there is no Queue or it has no status yet.
    """
    queue = next((o for o in objects if o.get("kind") == "Queue"), None)
    if queue is None:
        return Snapshot(Source.KAI, (), missing="the KAI Queue has not been observed yet")
    name = str(queue.get("metadata", {}).get("name", ""))
    read = (f"Queue {name}",)
    status = queue.get("status")
    if not isinstance(status, Mapping):
        return Snapshot(Source.KAI, read, missing=f"the KAI Queue {name} reports no status yet")
    classes = tuple(device_classes)
    quota_value = queue.get("spec", {}).get("resources", {}).get("gpu", {}).get("quota")
    quota = int(quota_value) if isinstance(quota_value, int | float) and quota_value >= 0 else None
    allocated = status.get("allocated") or {}
    figures = [
        Figure(str(r), gpus(v), quota if r == "nvidia.com/gpu" else None)
        for r, v in allocated.items()
        if is_gpu(str(r), classes)
    ]
    if not any(f.resource == "nvidia.com/gpu" for f in figures):
        # An empty queue reports no allocation at all: none of its GPUs is in use.
        figures.append(Figure("nvidia.com/gpu", 0, quota))
    return Snapshot(Source.KAI, read, tuple(sorted(figures, key=lambda f: f.resource)))
