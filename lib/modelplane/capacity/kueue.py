"""The Kueue adapter: a ``ClusterQueue``'s status (and its ResourceFlavors) as a capacity snapshot.

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
from modelplane.capacity.snapshot import POOL_LABEL, Figure, Snapshot, gpus, is_gpu
from modelplane.shapes import METADATA, Shape

API_VERSION = "kueue.x-k8s.io/v1beta2"
_NUMBER = (str, int, float)
# What the adapter reads of a ClusterQueue and a ResourceFlavor: objects are conformed to these where they are read.
CLUSTER_QUEUE: Shape = {
    "kind": str,
    "metadata": METADATA,
    "spec": {
        "resourceGroups": [{"flavors": [{"name": str, "resources": [{"name": str, "nominalQuota": _NUMBER}]}]}],
    },
    "status": {"flavorsUsage": [{"name": str, "resources": [{"name": str, "total": _NUMBER}]}]},
}
RESOURCE_FLAVOR: Shape = {"kind": str, "metadata": METADATA, "spec": {"nodeLabels": {str: str}}}


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


def kueue_snapshot(objects: Sequence[Mapping[str, Any]], device_classes: Iterable[str] = ()) -> Snapshot:
    """Read the Kueue ClusterQueue and ResourceFlavors among ``objects``.

    Args:
        objects: The scheduler's status objects as observed on the cluster: the
            ClusterQueue and any of its ResourceFlavors (conformed to ``CLUSTER_QUEUE``
            and ``RESOURCE_FLAVOR``).
        device_classes: DRA device classes that count as GPUs besides ``nvidia.com/gpu``.

    Returns:
        The snapshot; not known when there is no ClusterQueue or it has no status yet.
    """
    queue = next((o for o in objects if o.get("kind") == "ClusterQueue"), None)
    if queue is None:
        return Snapshot(Source.KUEUE, (), missing="the Kueue ClusterQueue has not been observed yet")
    name = str(queue.get("metadata", {}).get("name", ""))
    flavors = {str(o.get("metadata", {}).get("name")): o for o in objects if o.get("kind") == "ResourceFlavor"}
    read = (f"ClusterQueue {name}", *(f"ResourceFlavor {f}" for f in sorted(flavors)))
    status = queue.get("status")
    if not isinstance(status, Mapping):
        return Snapshot(Source.KUEUE, read, missing=f"the Kueue ClusterQueue {name} reports no status yet")
    classes = tuple(device_classes)
    quotas = _quotas(queue)
    used: dict[tuple[str, str], int] = {}
    for flavor in status.get("flavorsUsage") or []:
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
    return Snapshot(Source.KUEUE, read, tuple(figures))
