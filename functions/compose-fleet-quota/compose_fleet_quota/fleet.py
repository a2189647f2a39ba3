"""What a FleetQuota reads: the namespaces it selects, their ModelReplicas, and each pool's class.

Bounded by the quota's own namespaces: it asks for every Namespace (small objects; with a
selector of matchLabels only, just those with the labels), then for the ModelReplicas of each
namespace selected (one requirement per namespace, at most ``_PER_NAMESPACE``; beyond that, or
for a selector of every namespace, the ModelReplicas of every namespace, kept only where
selected). The InferenceClusters say which class each pool is of, the InferenceClasses what
devices a class has (for a limit's deviceSelector).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pydantic
from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import protojson
from modelplane.capacity import PoolKey, cluster_info, replica_occupancy
from modelplane.fnkit import inputs
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.structs import labels_at, string_at
from modelplane.kinds import API_VERSION
from modelplane.problems import describe, invalid
from modelplane.quota import Replica
from modelplane.scheduling.quotas import Quota, namespace_labels
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

NAMESPACES = Requirement("namespaces", "v1", "Namespace")
CLUSTERS = Requirement("clusters", API_VERSION, "InferenceCluster")
CLASSES = Requirement("classes", API_VERSION, "InferenceClass")
ALL_REPLICAS = Requirement("replicas", API_VERSION, "ModelReplica")
_PER_NAMESPACE = 16  # namespaces asked for one by one; more are read as one list


def _replicas_of(namespace: str) -> Requirement:
    return Requirement(f"replicas-{namespace}", API_VERSION, "ModelReplica")


@dataclass(frozen=True)
class Fleet:
    """What the quota reads.

    Attributes:
        namespaces: The namespaces the quota selects, sorted.
        replicas: Their ModelReplicas.
        pool_class: Each pool's InferenceClass, by (cluster, pool).
        classes: The InferenceClasses, by name.
    """

    namespaces: tuple[str, ...]
    replicas: tuple[Replica, ...]
    pool_class: Mapping[PoolKey, str]
    classes: Mapping[str, InferenceClass]


def request_namespaces(rsp: fnv1.RunFunctionResponse, quota: Quota, match_labels: Mapping[str, str]) -> None:
    """Ask for the namespaces (those with ``match_labels`` when the selector has nothing else), clusters and classes."""
    only_labels = len(quota.selector.requirements) == len(match_labels)
    NAMESPACES.request(rsp, labels=match_labels if only_labels else None)
    CLUSTERS.request(rsp)
    CLASSES.request(rsp)


def selected(req: fnv1.RunFunctionRequest, quota: Quota) -> tuple[str, ...] | None:
    """The namespaces the quota selects, sorted; None until they are fetched."""
    if not NAMESPACES.fetched(req):
        return None
    names = []
    for struct in NAMESPACES.structs(req):
        name = string_at(struct, "metadata", "name")
        # Labels that do not read as a map of strings select nothing: the name label alone stands.
        if name and quota.selector.matches(namespace_labels(name, labels_at(struct))):
            names.append(name)
    return tuple(sorted(set(names)))


def request_replicas(rsp: fnv1.RunFunctionResponse, namespaces: tuple[str, ...], *, every: bool) -> None:
    """Ask for the ModelReplicas of ``namespaces``: one by one, or all at once (``every`` or too many)."""
    if every or len(namespaces) > _PER_NAMESPACE:
        ALL_REPLICAS.request(rsp)
        return
    for namespace in namespaces:
        _replicas_of(namespace).request(rsp, namespace=namespace)


def fetched(req: fnv1.RunFunctionRequest, namespaces: tuple[str, ...], *, every: bool) -> bool:
    """Whether every requirement is answered."""
    lists = [ALL_REPLICAS] if every or len(namespaces) > _PER_NAMESPACE else [_replicas_of(n) for n in namespaces]
    return all(r.fetched(req) for r in (CLUSTERS, CLASSES, *lists))


def read(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, namespaces: tuple[str, ...]) -> Fleet:
    """The quota's fleet as fetched; an object that does not read whole is named in a warning and left out."""
    wanted = set(namespaces)
    replicas = []
    structs = [s for r in (ALL_REPLICAS, *map(_replicas_of, namespaces)) for s in r.structs(req)]
    for struct in structs:
        if string_at(struct, "metadata", "namespace") not in wanted:
            continue
        try:
            occupancy = replica_occupancy(ModelReplica.model_validate(protojson.struct_to_dict(struct)))
        except pydantic.ValidationError as err:
            inputs.report(rsp, f"ModelReplica {string_at(struct, 'metadata', 'name')}", invalid(err))
            continue
        if occupancy is not None:
            replicas.append(Replica(occupancy, string_at(struct, "metadata", "creationTimestamp")))
    pool_class: dict[PoolKey, str] = {}
    for struct in CLUSTERS.structs(req):
        name = string_at(struct, "metadata", "name")
        try:
            cluster = InferenceCluster.model_validate(protojson.struct_to_dict(struct))
        except pydantic.ValidationError as err:
            response.warning(rsp, f"InferenceCluster {name} cannot be read: {describe(invalid(err))}")
            continue
        info = cluster_info(cluster)
        if info is None:
            continue
        # A pool taken out of the spec keeps its replicas until they move: they count under the class it had.
        for removing in (cluster.status.removingPools or []) if cluster.status is not None else []:
            if removing.name and removing.className:
                pool_class[info.name, removing.name] = removing.className
        for pool in info.pools:
            pool_class[info.name, pool.name] = pool.class_name
    classes: dict[str, InferenceClass] = {}
    for struct in CLASSES.structs(req):
        name = string_at(struct, "metadata", "name")
        try:
            classes[name] = InferenceClass.model_validate(protojson.struct_to_dict(struct))
        except pydantic.ValidationError as err:
            response.warning(rsp, f"InferenceClass {name} cannot be read: {describe(invalid(err))}")
    return Fleet(namespaces, tuple(replicas), pool_class, classes)
