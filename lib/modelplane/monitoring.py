"""prometheus-operator monitors: an engine's PodMonitor, an endpoint picker's ServiceMonitor, a deployment's rules.

Composed only on clusters whose ``spec.observability.prometheus`` is Installed or
Managed. Every engine series carries ``modelplane_deployment``, ``modelplane_replica``
and ``modelplane_cluster`` (relabelled at scrape), so the recording rules below, and
the autoscaling that reads them, need no knowledge of pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from modelplane.routing.picker import Engine

MONITORING_API_VERSION = "monitoring.coreos.com/v1"
METRICS_PATH = "/metrics"
# LeaderWorkerSet labels every pod with its index in its group; only the leader (0) serves metrics.
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
DEPLOYMENT_METRIC_LABEL = "modelplane_deployment"
REPLICA_METRIC_LABEL = "modelplane_replica"
CLUSTER_METRIC_LABEL = "modelplane_cluster"
# The recording rules' names, which the autoscaling issue reads.
QUEUE_PER_READY_REPLICA = "modelplane:queue_depth_per_ready_replica"
KV_CACHE_USAGE = "modelplane:kv_cache_usage:avg"


class Prometheus(StrEnum):
    """``InferenceCluster.spec.observability.prometheus``."""

    INSTALLED = "Installed"
    MANAGED = "Managed"
    NONE = "None"

    @property
    def monitors(self) -> bool:
        """Whether monitors are composed on the cluster."""
        return self is not Prometheus.NONE


def prometheus_of(value: object) -> Prometheus:
    """The cluster's setting; anything unset or unknown reads as None (compose no monitors)."""
    return Prometheus(value) if value in {str(p) for p in Prometheus} else Prometheus.NONE


# (queued requests, KV-cache use in 0..1) per engine.
ENGINE_METRICS: dict[Engine, tuple[str, str]] = {
    Engine.VLLM: ("vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"),
    Engine.SGLANG: ("sglang:num_queue_reqs", "sglang:token_usage"),
}


@dataclass(frozen=True)
class ScrapeTarget:
    """Whose engine pods one PodMonitor scrapes, and how.

    Attributes:
        name: The PodMonitor's name (the replica's).
        namespace: Its namespace (the replica's).
        selector: Labels of every pod of the replica.
        port: The engine's metrics port (its serving port).
        leader_only_size: For multi-node workers, the nodes per worker: pods of index 1 and
            above (the followers, which serve no metrics) are left out; 1 otherwise.
        deployment: The deployment, for ``modelplane_deployment``.
        replica: The replica, for ``modelplane_replica``.
        cluster: The cluster, for ``modelplane_cluster``.
    """

    name: str
    namespace: str
    selector: Mapping[str, str]
    port: int
    leader_only_size: int
    deployment: str
    replica: str
    cluster: str


def _set(label: str, value: str) -> dict[str, Any]:
    return {"action": "replace", "targetLabel": label, "replacement": value}


def pod_monitor(target: ScrapeTarget, labels: Mapping[str, str]) -> dict[str, Any]:
    """The replica's PodMonitor: ``/metrics`` on the engine's port, relabelled with where it runs."""
    selector: dict[str, Any] = {"matchLabels": dict(target.selector)}
    if target.leader_only_size > 1:
        followers = [str(i) for i in range(1, target.leader_only_size)]
        selector["matchExpressions"] = [{"key": LWS_WORKER_INDEX_LABEL, "operator": "NotIn", "values": followers}]
    endpoint = {
        "portNumber": target.port,
        "path": METRICS_PATH,
        "relabelings": [
            _set(DEPLOYMENT_METRIC_LABEL, target.deployment),
            _set(REPLICA_METRIC_LABEL, target.replica),
            _set(CLUSTER_METRIC_LABEL, target.cluster),
        ],
    }
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "PodMonitor",
        "metadata": {"name": target.name, "namespace": target.namespace, "labels": dict(labels)},
        "spec": {"selector": selector, "podMetricsEndpoints": [endpoint]},
    }


def service_monitor(
    name: str, namespace: str, selector: Mapping[str, str], labels: Mapping[str, str], port: str
) -> dict[str, Any]:
    """A ServiceMonitor scraping the named port of the Services ``selector`` matches (an endpoint picker's)."""
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"selector": {"matchLabels": dict(selector)}, "endpoints": [{"port": port, "path": METRICS_PATH}]},
    }


def fleet_rules(
    name: str, namespace: str, deployment: str, cluster: str, engine: Engine, labels: Mapping[str, str]
) -> dict[str, Any]:
    """The PrometheusRule recording a deployment's signals on one cluster: queue depth per Ready replica, KV-cache use.

    A replica counts as Ready when its engine's scrape is up; queue depth is the waiting
    requests of all its engines.
    """
    queued, kv = ENGINE_METRICS[engine]
    match = f'{DEPLOYMENT_METRIC_LABEL}="{deployment}",namespace="{namespace}"'
    ready = f"count(count by ({REPLICA_METRIC_LABEL}) (up{{{match}}} == 1))"
    out = {DEPLOYMENT_METRIC_LABEL: deployment, CLUSTER_METRIC_LABEL: cluster, "namespace": namespace}
    rules = [
        {"record": QUEUE_PER_READY_REPLICA, "expr": f"sum({queued}{{{match}}}) / {ready}", "labels": out},
        {"record": KV_CACHE_USAGE, "expr": f"avg({kv}{{{match}}})", "labels": out},
    ]
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"groups": [{"name": f"modelplane-{name}", "rules": rules}]},
    }
