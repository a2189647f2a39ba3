"""The KServe backend: one LLMInferenceService (serving.kserve.io/v1alpha2) per replica.

``replicas`` is the serving role's workers, ``parallelism`` its topology,
``template`` its pod (the leader's, for multi-node workers) and ``worker`` the
pod of the other nodes of a multi-node worker; a disaggregated replica adds
``prefill`` with its own replicas, parallelism, template and worker. Pod labels
and annotations go in ``labels``/``annotations``, which KServe puts on the pods.
No ``model`` is set, unless the replica uses a NodeLocal ModelCache: then ``model.uri`` is the
LocalModelCache's ``sourceModelUri``, which KServe rewrites to the node-local copy's claim and
mounts at ``/mnt/models`` in the engine container; otherwise the engine loads its weights as its
args say. KServe's
managed route attaches to the cluster's gateway and serves the replica's virtual
host (``replica_host``) at ``/``; a disaggregated replica also gets KServe's
scheduler (the endpoint picker that splits prefill and decode).

The route's ``rules`` replace those of KServe's preset (``kserve-config-llm-router-route``,
which matches ``/<namespace>/<name>``): KServe merges lists whole. Its backendRef is
the one that preset writes, the replica's InferencePool, which KServe itself swaps
for the workload Service when the replica has no scheduler.

In routing mode Pool (``spec.routing``, its deployment's) the replica joins its
deployment's InferencePool on the cluster instead (``modelplane.routing.pool``):
``router.scheduler`` references that pool and carries the endpoint picker's
EndpointPickerConfig inline, and the route serves the pool's virtual host
(``pool_host``), so every replica of the deployment there routes alike, and its
own, so that its own endpoint serves while routing modes change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.backends.model import Remote, ReplicaWork, RolePods
from modelplane.backends.pods import selector
from modelplane.names import (
    DEPLOYMENT_LABEL,
    WORKLOAD_GATEWAY_NAME,
    WORKLOAD_GATEWAY_NAMESPACE,
    pool_host,
    pool_name,
    remote_key,
    replica_host,
)
from modelplane.routing.picker import Mode, picker_config, routing_of
from modelplane.topology import Role

API_VERSION = "serving.kserve.io/v1alpha2"
INFERENCE_POOL_GROUP = "inference.networking.k8s.io"
# The port KServe's presets serve on and address the InferencePool at.
SERVING_PORT = 8000
_MAX_NAME = 63
_MD5_HEX = 32


def _child_name(parent: str, suffix: str) -> str:
    # knative's kmeta.ChildName, which KServe names its children with: a long parent is cut
    # and followed by its MD5.
    if len(parent) <= _MAX_NAME - len(suffix):
        return parent + suffix
    digest = hashlib.md5(parent.encode(), usedforsecurity=False).hexdigest()
    return parent[: _MAX_NAME - len(suffix) - _MD5_HEX].rstrip("-") + digest + suffix


def _route(work: ReplicaWork, shared_pool: str | None) -> dict[str, Any]:
    pool = {
        "group": INFERENCE_POOL_GROUP,
        "kind": "InferencePool",
        "name": shared_pool or _child_name(work.name, "-inference-pool"),
        "port": SERVING_PORT,
        "weight": 1,
    }
    own = replica_host(work.name, work.namespace)
    # Joined to the pool, the route serves the pool's host and still the replica's own: its own
    # endpoint serves on while the deployment moves between routing modes (docs/routing.md).
    hosts = [pool_host(work.labels[DEPLOYMENT_LABEL], work.namespace), own] if shared_pool else [own]
    rule = {
        "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
        "backendRefs": [pool],
        # As the preset's rule: a token stream can run for minutes ("0s" disables the timeout).
        "timeouts": {"backendRequest": "0s", "request": "0s"},
    }
    return {"http": {"spec": {"hostnames": hosts, "rules": [rule]}}}


def _shared_pool(work: ReplicaWork) -> str | None:
    """The deployment's pool on this cluster, which the replica joins in routing mode Pool; None otherwise."""
    deployment = work.labels.get(DEPLOYMENT_LABEL)
    # Only a replica told so (its deployment writes spec.routing.mode Pool) joins a pool.
    if not deployment or work.routing.get("mode") != Mode.POOL:
        return None
    return pool_name(deployment)


def _workload(pods: RolePods) -> dict[str, Any]:
    out: dict[str, Any] = {
        "replicas": pods.work.footprint.workers,
        "parallelism": dict(pods.work.parallelism),
        "labels": dict(pods.labels),
        "template": dict(pods.spec),
    }
    if pods.annotations:
        out["annotations"] = dict(pods.annotations)
    if pods.work.footprint.nodes_per_worker > 1:
        out["worker"] = dict(pods.spec)
    return out


def _labels(work: ReplicaWork, roles: Sequence[RolePods]) -> Mapping[str, str]:
    labels = dict(work.labels)
    labels.update(selector(work, work.serving_role))
    for pods in roles:
        labels.update(pods.wrapping.workload_labels)
    return labels


def build(work: ReplicaWork, roles: Sequence[RolePods]) -> list[Remote]:
    """The replica's LLMInferenceService.

    Raises:
        InvalidPickerConfigError: routing mode Pool with a Custom endpoint picker config that cannot be used.
    """
    by_role = {pods.work.role: pods for pods in roles}
    serving = by_role[work.serving_role.role]
    spec: dict[str, Any] = _workload(serving)
    if work.model_uri:
        # Exactly the LocalModelCache's sourceModelUri: KServe serves the node-local copy only on a match.
        spec = {"model": {"uri": work.model_uri}, **spec}
    shared = _shared_pool(work)
    router: dict[str, Any] = {
        "route": _route(work, shared),
        "gateway": {"refs": [{"name": WORKLOAD_GATEWAY_NAME, "namespace": WORKLOAD_GATEWAY_NAMESPACE}]},
    }
    prefill = by_role.get(Role.PREFILL)
    if prefill is not None:
        spec["prefill"] = _workload(prefill)
        router["scheduler"] = {}
    if shared is not None:
        # The deployment's pool on this cluster, and its endpoint picker's configuration inline.
        config = picker_config(routing_of(work.routing).picker, disaggregated=prefill is not None)
        router["scheduler"] = {"pool": {"ref": {"name": shared}}, "config": {"inline": config}}
    spec["router"] = router
    service = {
        "apiVersion": API_VERSION,
        "kind": "LLMInferenceService",
        "metadata": {"name": work.name, "namespace": work.namespace, "labels": dict(_labels(work, roles))},
        "spec": spec,
    }
    return [Remote(remote_key("workload"), service)]
