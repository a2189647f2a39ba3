"""The Native backend: plain Kubernetes workloads, no KServe.

Per role, a Deployment (single-node workers: ``replicas`` = workers) or a
LeaderWorkerSet (multi-node workers: ``size`` = nodes per worker, ``replicas`` =
workers) and a Service over the pods that serve (every pod of a Deployment, the
leader of each LeaderWorkerSet group). One HTTPRoute on the cluster's gateway
sends every request for the replica's virtual host (``replica_host``) to the
serving role (unified, or decode, which reaches prefill itself), path unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modelplane.backends.model import Remote, ReplicaWork, RolePods
from modelplane.backends.pods import pod_template, selector
from modelplane.names import (
    WORKLOAD_GATEWAY_NAME,
    WORKLOAD_GATEWAY_NAMESPACE,
    remote_key,
    replica_host,
    workload_name,
)

LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
# LeaderWorkerSet labels every pod with its index in the group; the leader is index 0.
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


def _meta(work: ReplicaWork, pods: RolePods, *, workload: bool = False) -> dict[str, Any]:
    labels = {**work.labels, **selector(work, pods.work)}
    if workload:
        labels.update(pods.wrapping.workload_labels)
    return {"name": pods.name, "namespace": work.namespace, "labels": labels}


def _deployment(work: ReplicaWork, pods: RolePods) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(work, pods, workload=True),
        "spec": {
            "replicas": pods.work.footprint.workers,
            "selector": {"matchLabels": selector(work, pods.work)},
            "template": pod_template(pods),
        },
    }


def _leader_worker_set(work: ReplicaWork, pods: RolePods) -> dict[str, Any]:
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": _meta(work, pods, workload=True),
        "spec": {
            "replicas": pods.work.footprint.workers,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": pods.work.footprint.nodes_per_worker,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "workerTemplate": pod_template(pods),
            },
        },
    }


def _service(work: ReplicaWork, pods: RolePods) -> dict[str, Any]:
    pick = selector(work, pods.work)
    if pods.work.footprint.nodes_per_worker > 1:
        pick[LWS_WORKER_INDEX_LABEL] = "0"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(work, pods),
        "spec": {
            "selector": pick,
            "ports": [{"name": "http", "port": pods.port, "targetPort": pods.port, "protocol": "TCP"}],
        },
    }


def _route(work: ReplicaWork, pods: RolePods) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {
            "name": workload_name(work.name, "unified"),
            "namespace": work.namespace,
            "labels": dict(work.labels),
        },
        "spec": {
            "parentRefs": [{"name": WORKLOAD_GATEWAY_NAME, "namespace": WORKLOAD_GATEWAY_NAMESPACE}],
            "hostnames": [replica_host(work.name, work.namespace)],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [{"name": pods.name, "port": pods.port}],
                    # "0s" disables the request timeout: a token stream may run for minutes.
                    "timeouts": {"request": "0s"},
                }
            ],
        },
    }


def build(work: ReplicaWork, roles: Sequence[RolePods]) -> list[Remote]:
    """The workloads, Services and route of a replica."""
    out: list[Remote] = []
    serving = work.serving_role.role
    for pods in roles:
        role = str(pods.work.role)
        multi_node = pods.work.footprint.nodes_per_worker > 1
        workload = _leader_worker_set(work, pods) if multi_node else _deployment(work, pods)
        out.append(Remote(remote_key("workload", role), workload))
        out.append(Remote(remote_key("service", role), _service(work, pods)))
        if pods.work.role is serving:
            out.append(Remote(remote_key("route"), _route(work, pods)))
    return out
