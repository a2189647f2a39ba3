"""Kueue: the workload is submitted to a LocalQueue; its ClusterQueue (and ResourceFlavors) tell capacity.

The ``kueue.x-k8s.io/queue-name`` label on the workload object and its pods is
what Kueue's integrations act on. Serving workloads have no ``suspend`` field:
Kueue's webhook holds their pods with its admission scheduling gate until the
Workload is admitted — a Deployment through the ``deployment``/``pod``
integration (one pod at a time), a LeaderWorkerSet through the
``leaderworkerset`` integration (each group admitted whole). The ServingStack
enables those integrations.

A ``ClusterQueue`` (``kueue.x-k8s.io/v1beta2``) reports per ResourceFlavor and
resource the quota its admitted workloads use (``status.flavorsUsage``) and
sets a ``nominalQuota`` per flavor and resource in ``spec.resourceGroups``. A
ResourceFlavor's ``spec.nodeLabels`` say which nodes it stands for: one with
Modelplane's pool label counts for that pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from modelplane.capacity.observed import Source
from modelplane.capacity.snapshot import Figure, Snapshot, gpus, is_gpu, status_object
from modelplane.layout import METADATA, QUANTITY, Layout
from modelplane.names import POOL_LABEL
from modelplane.schedulers.base import Gang, Observation, Seen, Watch, Wrapping, required_setting

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# The scheduling gate Kueue's pod webhook puts on a queued pod and lifts once its Workload is admitted.
ADMISSION_GATE = "kueue.x-k8s.io/admission"
API_VERSION = "kueue.x-k8s.io/v1beta2"
# The watch name of a ResourceFlavor: this prefix and the flavor's name.
_FLAVOR_WATCH = "flavor-"
# What the adapter reads of a ClusterQueue and a ResourceFlavor: objects are conformed to these where they are read.
CLUSTER_QUEUE: Layout = {
    "kind": str,
    "metadata": METADATA,
    "spec": {
        "resourceGroups": [{"flavors": [{"name": str, "resources": [{"name": str, "nominalQuota": QUANTITY}]}]}],
    },
    "status": {"flavorsUsage": [{"name": str, "resources": [{"name": str, "total": QUANTITY}]}]},
}
RESOURCE_FLAVOR: Layout = {"kind": str, "metadata": METADATA, "spec": {"nodeLabels": {str: str}}}


def flavor_names(cluster_queue: Mapping[str, Any]) -> list[str]:
    """The ResourceFlavors a ClusterQueue's resource groups name, sorted."""
    groups = cluster_queue.get("spec", {}).get("resourceGroups") or []
    return sorted({str(f["name"]) for g in groups for f in g.get("flavors") or [] if f.get("name")})


def flavors_whole(cluster_queue: Mapping[str, Any]) -> bool:
    """Whether every resource group of a ClusterQueue names its flavors, as Kueue's CRD requires.

    A group without flavors, or a flavor without a name, is a ClusterQueue read in part: the
    flavors it names are not all the flavors it has.
    """
    groups = cluster_queue.get("spec", {}).get("resourceGroups") or []
    return all(g.get("flavors") and all(f.get("name") for f in g["flavors"]) for g in groups)


def _quotas(cluster_queue: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for group in cluster_queue.get("spec", {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                out[str(flavor.get("name")), str(res.get("name"))] = gpus(res.get("nominalQuota", 0))
    return out


def snapshot(objects: Sequence[Mapping[str, Any]], device_classes: Iterable[str] = ()) -> Snapshot:
    """Read the Kueue ClusterQueue and ResourceFlavors among ``objects``.

    Args:
        objects: The scheduler's status objects as observed on the cluster: the
            ClusterQueue and any of its ResourceFlavors (conformed to ``CLUSTER_QUEUE``
            and ``RESOURCE_FLAVOR``).
        device_classes: DRA device classes that count as GPUs besides ``nvidia.com/gpu``.

    Returns:
        The snapshot; not known when there is no ClusterQueue or it has no status yet.
    """
    flavors = {str(o.get("metadata", {}).get("name")): o for o in objects if o.get("kind") == "ResourceFlavor"}
    also_read = [f"ResourceFlavor {f}" for f in sorted(flavors)]
    found = status_object(objects, "ClusterQueue", Source.KUEUE, "the Kueue ClusterQueue", also_read)
    if isinstance(found, Snapshot):
        return found
    classes = tuple(device_classes)
    quotas = _quotas(found.obj)
    used: dict[tuple[str, str], int] = {}
    for flavor in found.status.get("flavorsUsage") or []:
        for res in flavor.get("resources") or []:
            used[str(flavor.get("name")), str(res.get("name"))] = gpus(res.get("total", 0))
    figures = []
    # An empty queue may report no usage at all: every GPU flavor it has quota for is idle.
    for flavor, resource in sorted(set(quotas) | set(used)):
        if not is_gpu(resource, classes):
            continue
        labels = (flavors.get(flavor) or {}).get("spec", {}).get("nodeLabels") or {}
        figures.append(
            Figure(
                resource,
                used.get((flavor, resource), 0),
                quotas.get((flavor, resource)),
                flavor,
                str(labels.get(POOL_LABEL, "")),
            )
        )
    return Snapshot(Source.KUEUE, found.read, tuple(figures))


def wrap(gang: Gang, settings: Mapping[str, Any]) -> Wrapping:  # noqa: ARG001 - the table's signature
    """Label the workload and its pods with the cluster's LocalQueue.

    Raises:
        SchedulerSettingsError: ``spec.scheduler.kueue.localQueueName`` is not set.
    """
    queue = required_setting(settings, "kueue", "localQueueName", "Kueue")
    labels = {QUEUE_LABEL: queue}
    return Wrapping(pod_labels=labels, workload_labels=labels)


def observe(settings: Any, seen: Seen) -> Observation:  # noqa: ANN401 - the cluster's spec.scheduler model
    """Observe the ClusterQueue behind the LocalQueue, once named, and the ResourceFlavors it names.

    The flavors are known once the ClusterQueue is observed and read whole; until then those
    observed before are kept (``partial``). A flavor observed before that the ClusterQueue no
    longer names is kept too (``kept_prefix``): an observed object that lost a flavor may be one
    read damaged, and an Observe-only Object costs nothing; they go once another queue is named.
    """
    name = settings.kueue.clusterQueueName if settings.kueue is not None else None
    if not name:
        return Observation(unobserved="no kueue.clusterQueueName to observe")
    queue = Watch(
        "queue",
        {"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name}},
        CLUSTER_QUEUE,
        "kueue-clusterqueue",
    )
    observed, whole = seen(queue)
    flavors = tuple(
        Watch(
            f"{_FLAVOR_WATCH}{flavor}",
            {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor}},
            RESOURCE_FLAVOR,
            f"kueue-flavor-{flavor}",
            observed_for=name,
        )
        for flavor in (flavor_names(observed) if observed is not None else [])
    )
    partial = observed is None or not whole or not flavors_whole(observed)
    return Observation((queue, *flavors), partial=partial, kept_prefix=_FLAVOR_WATCH, kept_for=name)
