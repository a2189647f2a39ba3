"""NVIDIA KAI scheduler: a PodGroup per gang, and the Queue whose status tells what its pods hold.

Every pod names the scheduler (``schedulerName: kai-scheduler``), its queue
(the ``kai.scheduler/queue`` label) and its PodGroup (the ``pod-group-name``
annotation KAI reads). The PodGroup's ``minMember`` is every pod of the role,
so KAI starts all of them or none.

A KAI ``Queue`` (``scheduling.run.ai/v2``) reports in ``status.allocated`` the
resources its running pods hold, by resource name, and carries its GPU quota
in ``spec.resources.gpu.quota`` (-1: unlimited).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from modelplane.capacity.observed import Source
from modelplane.capacity.snapshot import Figure, Snapshot, gpus, is_gpu, status_object
from modelplane.layout import METADATA, QUANTITY, Layout
from modelplane.schedulers.base import Gang, Observation, Seen, Watch, Wrapping, required_setting

SCHEDULER_NAME = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
POD_GROUP_ANNOTATION = "pod-group-name"
POD_GROUP_API_VERSION = "scheduling.run.ai/v2alpha2"
QUEUE_API_VERSION = "scheduling.run.ai/v2"
# What is read of a Queue: objects are conformed to it where they are read.
QUEUE: Layout = {
    "kind": str,
    "metadata": METADATA,
    "spec": {"resources": {"gpu": {"quota": (int, float)}}},
    "status": {"allocated": {str: QUANTITY}},
}


def wrap(gang: Gang, settings: Mapping[str, Any]) -> Wrapping:
    """Submit the gang to the KAI queue of ``settings.kai.queue`` as one PodGroup.

    Raises:
        SchedulerSettingsError: ``spec.scheduler.kai.queue`` is not set.
    """
    queue = required_setting(settings, "kai", "queue", "KAI")
    labels = {QUEUE_LABEL: queue}
    pod_group = {
        "apiVersion": POD_GROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": gang.name, "namespace": gang.namespace, "labels": {**gang.labels, **labels}},
        "spec": {"minMember": gang.pods, "queue": queue, "markUnschedulable": True},
    }
    return Wrapping(
        scheduler_name=SCHEDULER_NAME,
        pod_labels=labels,
        pod_annotations={POD_GROUP_ANNOTATION: gang.name},
        workload_labels=labels,
        objects=(pod_group,),
    )


def observe(settings: Any, seen: Seen) -> Observation:  # noqa: ANN401, ARG001 - the cluster's spec.scheduler model
    """Observe the cluster's Queue (``spec.scheduler.kai.queue``, required with KAI)."""
    queue = {"apiVersion": QUEUE_API_VERSION, "kind": "Queue", "metadata": {"name": settings.kai.queue}}
    return Observation((Watch("queue", queue, QUEUE, "kai-queue"),))


def snapshot(objects: Sequence[Mapping[str, Any]], device_classes: Iterable[str] = ()) -> Snapshot:
    """Read the KAI Queue among ``objects``.

    Args:
        objects: The scheduler's status objects as observed on the cluster (the Queue), conformed to ``QUEUE``.
        device_classes: DRA device classes that count as GPUs besides ``nvidia.com/gpu``.

    Returns:
        The snapshot; not known when there is no Queue or it has no status yet.
    """
    found = status_object(objects, "Queue", Source.KAI, "the KAI Queue")
    if isinstance(found, Snapshot):
        return found
    classes = tuple(device_classes)
    quota_value = found.obj.get("spec", {}).get("resources", {}).get("gpu", {}).get("quota")
    quota = int(quota_value) if isinstance(quota_value, int | float) and quota_value >= 0 else None
    allocated = found.status.get("allocated") or {}
    figures = [
        Figure(str(r), gpus(v), quota if r == "nvidia.com/gpu" else None)
        for r, v in allocated.items()
        if is_gpu(str(r), classes)
    ]
    if not any(f.resource == "nvidia.com/gpu" for f in figures):
        # An empty queue reports no allocation at all: none of its GPUs is in use.
        figures.append(Figure("nvidia.com/gpu", 0, quota))
    return Snapshot(Source.KAI, found.read, tuple(sorted(figures, key=lambda f: f.resource)))
