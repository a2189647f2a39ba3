"""Storage type NodeLocal: a KServe LocalModelNodeGroup over a cluster's node pools and a LocalModelCache.

Each cache has a node group of its own (cluster-scoped, ``cache_node_name``) whose storage limit is
the cache's size, so the limit KServe enforces is this cache's, and whose nodes are those of the
cluster's node pools (the ``modelplane.ai/pool`` node label), where the cluster's InferenceClasses
run. KServe's agent downloads the source to each node's ``NODE_LOCAL_PATH`` with its own storage
credentials; KServe's LLMInferenceServices whose model URI matches the source read the local copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modelplane.modelcache.work import CacheWork, Source, SourceKind
from modelplane.names import MODEL_CACHE_LABEL, POOL_LABEL, cache_label, cache_node_name

KSERVE_API_VERSION = "serving.kserve.io/v1alpha1"
# The directory on each node that holds the copies, and the StorageClass name the node group's local
# PersistentVolume and claim bind by (no StorageClass of this name needs to exist).
NODE_LOCAL_PATH = "/mnt/models"
NODE_LOCAL_CLASS = "modelplane-node-local"
# Where KServe mounts the model of an LLMInferenceService's spec.model.uri in its engine container
# (the container named "main"), the node-local copy included: the engine's --model points here.
SERVED_PATH = "/mnt/models"


class NodeLocalSourceError(ValueError):
    """A source KServe's node-local copies cannot read."""


def source_uri(source: Source) -> str:
    """The LocalModelCache's ``sourceModelUri``: ``hf://<repo>[:<revision>]``, the S3 prefix or the URL.

    Raises:
        NodeLocalSourceError: an OCI source (KServe downloads with its storage initializer, which reads no image).
    """
    match source.kind:
        case SourceKind.HUGGING_FACE:
            return f"hf://{source.location}:{source.revision}" if source.revision else f"hf://{source.location}"
        case SourceKind.S3 | SourceKind.HTTP:
            return source.location
        case SourceKind.OCI:
            msg = "spec.source.oci needs storage type PVC: KServe's node-local copies cannot read an image"
            raise NodeLocalSourceError(msg)


def node_group(work: CacheWork, pools: Sequence[str]) -> dict[str, Any]:
    """The LocalModelNodeGroup of the nodes of ``pools`` (of every pool-labelled node when there is none)."""
    if pools:
        term = {"key": POOL_LABEL, "operator": "In", "values": sorted(set(pools))}
    else:
        term = {"key": POOL_LABEL, "operator": "Exists"}
    return {
        "apiVersion": KSERVE_API_VERSION,
        "kind": "LocalModelNodeGroup",
        "metadata": {
            "name": cache_node_name(work.namespace, work.name),
            "labels": {MODEL_CACHE_LABEL: cache_label(work.name)},
        },
        "spec": {
            "storageLimit": work.size,
            "persistentVolumeSpec": {
                "accessModes": ["ReadWriteOnce"],
                "volumeMode": "Filesystem",
                "capacity": {"storage": work.size},
                "local": {"path": NODE_LOCAL_PATH},
                "storageClassName": NODE_LOCAL_CLASS,
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}},
            },
            "persistentVolumeClaimSpec": {
                "accessModes": ["ReadWriteOnce"],
                "volumeMode": "Filesystem",
                "resources": {"requests": {"storage": work.size}},
                "storageClassName": NODE_LOCAL_CLASS,
            },
        },
    }


def local_model_cache(work: CacheWork) -> dict[str, Any]:
    """The LocalModelCache that copies the source to every node of the cache's node group.

    Raises:
        NodeLocalSourceError: the source is one KServe cannot read (``source_uri``).
    """
    name = cache_node_name(work.namespace, work.name)
    return {
        "apiVersion": KSERVE_API_VERSION,
        "kind": "LocalModelCache",
        "metadata": {"name": name, "labels": {MODEL_CACHE_LABEL: cache_label(work.name)}},
        "spec": {"sourceModelUri": source_uri(work.source), "modelSize": work.size, "nodeGroups": [name]},
    }
