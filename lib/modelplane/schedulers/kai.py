"""NVIDIA KAI scheduler: a PodGroup per gang, so a multi-node worker is admitted whole.

Every pod names the scheduler (``schedulerName: kai-scheduler``), its queue
(the ``kai.scheduler/queue`` label) and its PodGroup (the ``pod-group-name``
annotation KAI reads). The PodGroup's ``minMember`` is every pod of the role,
so KAI starts all of them or none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.schedulers.base import Gang, SchedulerSettingsError, Wrapping

SCHEDULER_NAME = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
POD_GROUP_ANNOTATION = "pod-group-name"
POD_GROUP_API_VERSION = "scheduling.run.ai/v2alpha2"


def wrap(gang: Gang, settings: Mapping[str, Any]) -> Wrapping:
    """Submit the gang to the KAI queue of ``settings.kai.queue`` as one PodGroup.

    Raises:
        SchedulerSettingsError: ``spec.scheduler.kai.queue`` is not set.
    """
    queue = str((settings.get("kai") or {}).get("queue") or "")
    if not queue:
        msg = "spec.scheduler.kai.queue: required when scheduler.type is KAI"
        raise SchedulerSettingsError(msg)
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
