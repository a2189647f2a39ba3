"""What a run observes of its cluster: its pods and (scheduled runs) its Jobs, through ObservedObjectCollections.

provider-kubernetes creates an Observe-only Object (in the run's namespace on the control plane) for
each object the collection's selector finds on the workload cluster, labelled as the collection
says; the run asks for those Objects as required resources and reads each object from
``status.atProvider.manifest``. This is how the result contract in a pod's termination message
reaches the run: a Job's own status carries no message.
"""

from __future__ import annotations

from typing import Any

from modelplane.layout import CONDITION, METADATA, Layout
from modelplane.names import BATCH_RUN_LABEL
from modelplane.remote import OBJECT_API_VERSION, PROVIDER_CONFIG_KIND

_TERMINATED: Layout = {"message": str, "reason": str, "exitCode": int}
_CONTAINER: Layout = {
    "name": str,
    "state": {"terminated": _TERMINATED, "waiting": {"reason": str, "message": str}},
    "lastState": {"terminated": _TERMINATED},
}
_META: Layout = {**METADATA, "creationTimestamp": str}
# What is read of an observed pod, Job and CronJob (``status.atProvider.manifest`` of its Object).
POD: Layout = {
    "kind": str,
    "metadata": _META,
    "status": {
        "phase": str,
        "startTime": str,
        "conditions": [CONDITION],
        "containerStatuses": [_CONTAINER],
        "initContainerStatuses": [_CONTAINER],
    },
}
JOB: Layout = {
    "kind": str,
    "metadata": _META,
    "spec": {"suspend": bool},
    "status": {
        "conditions": [CONDITION],
        "startTime": str,
        "completionTime": str,
        "active": int,
        "ready": int,
        "failed": int,
        "succeeded": int,
        # A CronJob's.
        "lastScheduleTime": str,
        "lastSuccessfulTime": str,
    },
}


def observed(manifest: Layout) -> Layout:
    """The layout of an Object carrying ``manifest``'s layout."""
    return {"status": {"atProvider": {"manifest": manifest}}}


def collection(*, name: str, namespace: str, provider_config: str, kind: str, run: str, label: str) -> dict[str, Any]:
    """An ObservedObjectCollection of the ``kind`` objects (``Pod`` or ``Job``) labelled with the run on its cluster.

    Args:
        name: The collection's name (at most 63 characters).
        namespace: The run's namespace (on both clusters).
        provider_config: The cluster's ClusterProviderConfig.
        kind: ``Pod`` or ``Job``.
        run: The run's ``batch_label``.
        label: The label of the Objects it creates (``BATCH_PODS_LABEL`` or ``BATCH_JOBS_LABEL``).
    """
    api_version = "v1" if kind == "Pod" else "batch/v1"
    return {
        "apiVersion": OBJECT_API_VERSION,
        "kind": "ObservedObjectCollection",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "observeObjects": {
                "apiVersion": api_version,
                "kind": kind,
                "namespace": namespace,
                "selector": {"matchLabels": {BATCH_RUN_LABEL: run}},
            },
            "objectTemplate": {"metadata": {"labels": {label: run}}},
            "providerConfigRef": {"kind": PROVIDER_CONFIG_KIND, "name": provider_config},
        },
    }
