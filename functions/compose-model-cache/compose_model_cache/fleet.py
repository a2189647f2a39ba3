"""What a ModelCache reads of the fleet: the InferenceClusters, and the ModelReplicas that use the cache.

The seam until ModelDeployment's ``spec.modelCacheRef`` lands: a ModelReplica of the cache's
namespace labelled ``modelplane.ai/model-cache: <cache>`` (``MODEL_CACHE_LABEL``, the value
``cache_label(cache)``) uses the cache. Its ``spec.inferenceClusterRef`` is where the cache keeps a
copy under placement Follow, and where a copy is never deleted while the replica exists. The
deployment will write that label on the replicas it composes; until then it is written by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pydantic
from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import protojson
from modelplane.fnkit import inputs
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.structs import string_at
from modelplane.kinds import API_VERSION
from modelplane.layout import METADATA
from modelplane.modelcache.targets import User
from modelplane.names import MODEL_CACHE_LABEL, cache_label
from modelplane.problems import describe, invalid
from modelplane_models.inference_cluster import InferenceCluster

CLUSTERS = Requirement("clusters", API_VERSION, "InferenceCluster")
USERS = Requirement("replicas", API_VERSION, "ModelReplica")
_REPLICA = {"metadata": METADATA, "spec": {"inferenceClusterRef": {"name": str}}}


@dataclass(frozen=True)
class Fleet:
    """The clusters by name (None: present but unreadable), the replicas using the cache, and those unreadable."""

    clusters: Mapping[str, InferenceCluster | None]
    users: tuple[User, ...]
    unreadable_users: tuple[str, ...]


def request(rsp: fnv1.RunFunctionResponse, cache: str, namespace: str) -> None:
    """Ask for every InferenceCluster, and the ModelReplicas of ``namespace`` labelled with ``cache``."""
    CLUSTERS.request(rsp)
    USERS.request(rsp, labels={MODEL_CACHE_LABEL: cache_label(cache)}, namespace=namespace)


def fetched(req: fnv1.RunFunctionRequest) -> bool:
    """Whether Crossplane has answered both requirements."""
    return CLUSTERS.fetched(req) and USERS.fetched(req)


def read(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, cache: str) -> Fleet:
    """The fleet as fetched; an object that does not read whole is named, never guessed."""
    clusters: dict[str, InferenceCluster | None] = {}
    for struct in CLUSTERS.structs(req):
        name = string_at(struct, "metadata", "name")
        try:
            clusters[name] = InferenceCluster.model_validate(protojson.struct_to_dict(struct))
        except pydantic.ValidationError as err:
            response.warning(rsp, f"InferenceCluster {name} cannot be read: {describe(invalid(err))}")
            clusters.setdefault(name, None)
    users, unreadable = [], []
    for replica in inputs.required(req, rsp, USERS.name, _REPLICA):
        name = str(replica.get("metadata", {}).get("name", ""))
        # The label value is cut for a long name: the cache's own name must match it too.
        if replica.get("metadata", {}).get("labels", {}).get(MODEL_CACHE_LABEL) != cache_label(cache):
            continue
        cluster = replica.get("spec", {}).get("inferenceClusterRef", {}).get("name")
        if cluster:
            users.append(User(name, cluster))
        else:
            unreadable.append(name or "(unnamed)")
    return Fleet(dict(sorted(clusters.items())), tuple(users), tuple(sorted(unreadable)))
