"""Kueue: the workload is submitted to a LocalQueue and runs once Kueue admits it.

The ``kueue.x-k8s.io/queue-name`` label on the workload object and its pods is
what Kueue's integrations act on. Serving workloads have no ``suspend`` field:
Kueue's webhook holds their pods with its admission scheduling gate until the
Workload is admitted — a Deployment through the ``deployment``/``pod``
integration (one pod at a time), a LeaderWorkerSet through the
``leaderworkerset`` integration (each group admitted whole). The ServingStack
enables those integrations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.schedulers.base import Gang, SchedulerSettingsError, Wrapping

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def wrap(gang: Gang, settings: Mapping[str, Any]) -> Wrapping:  # noqa: ARG001 - the table's signature
    """Label the workload and its pods with the cluster's LocalQueue.

    Raises:
        SchedulerSettingsError: ``spec.scheduler.kueue.localQueueName`` is not set.
    """
    queue = str((settings.get("kueue") or {}).get("localQueueName") or "")
    if not queue:
        msg = "spec.scheduler.kueue.localQueueName: required when scheduler.type is Kueue"
        raise SchedulerSettingsError(msg)
    labels = {QUEUE_LABEL: queue}
    return Wrapping(pod_labels=labels, workload_labels=labels)
