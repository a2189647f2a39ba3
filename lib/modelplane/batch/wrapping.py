"""How a batch run's Job is handed to its cluster's workload scheduler, and at what priority.

A replica's gang wrapping (``modelplane.schedulers``) is for serving workloads; a batch Job is
simpler, and each scheduler runs Jobs natively:

- Kueue: the Job carries the cluster's LocalQueue (``kueue.x-k8s.io/queue-name``); Kueue's webhook
  suspends it until its Workload is admitted (Modelplane never writes ``suspend``, which would fight
  Kueue). ``spec.priority`` names a WorkloadPriorityClass (``kueue.x-k8s.io/priority-class``).
- KAI: the pods name the scheduler and the queue; KAI's pod grouper makes the Job's PodGroup.
  ``spec.priority`` is the pods' PriorityClass, which KAI ranks and preempts by.
- None: ``spec.priority`` is the pods' PriorityClass, which the default scheduler preempts by.

Only a Dedicated worker (it claims GPUs) is queued; a Service-mode client holds no GPU, asks for no
quota, and is never queued nor given a priority.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.schedulers import SCHEDULERS, UnknownSchedulerError, kai, kueue
from modelplane.schedulers.base import required_setting

KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


@dataclass(frozen=True)
class BatchWrapping:
    """What a scheduler adds to a batch Job.

    Attributes:
        job_labels: Labels on the Job (and a CronJob's job template).
        pod_labels: Labels on the pods.
        scheduler_name: The pods' ``schedulerName`` ("": the default scheduler).
        priority_class: The pods' ``priorityClassName`` ("": none).
    """

    job_labels: Mapping[str, str] = field(default_factory=dict)
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    scheduler_name: str = ""
    priority_class: str = ""


def batch_wrapping(settings: Mapping[str, Any], priority: str, *, queued: bool) -> BatchWrapping:
    """The wrapping of a batch Job on a cluster whose ``spec.scheduler`` is ``settings`` (as written).

    Args:
        settings: The InferenceCluster's ``spec.scheduler``.
        priority: ``spec.priority`` ("" for none).
        queued: Whether the Job is queued at all (a Dedicated worker; not a Service-mode client).

    Raises:
        UnknownSchedulerError: ``spec.scheduler.type`` names no known scheduler.
        SchedulerSettingsError: The scheduler lacks a setting it needs (named in the message).
    """
    kind = str(settings.get("type") or "None")
    if kind not in SCHEDULERS:
        msg = f"spec.scheduler.type: unknown scheduler {kind!r} (known: {', '.join(sorted(SCHEDULERS))})"
        raise UnknownSchedulerError(msg)
    if not queued:
        return BatchWrapping()
    if kind == "Kueue":
        labels = {kueue.QUEUE_LABEL: required_setting(settings, "kueue", "localQueueName", "Kueue")}
        if priority:
            labels[KUEUE_PRIORITY_LABEL] = priority
        return BatchWrapping(job_labels=labels)
    if kind == "KAI":
        labels = {kai.QUEUE_LABEL: required_setting(settings, "kai", "queue", "KAI")}
        return BatchWrapping(labels, labels, kai.SCHEDULER_NAME, priority)
    return BatchWrapping(priority_class=priority)
