"""What a user checks of a deployment's in-cluster routing (``docs/routing.md``) on the e2e tier.

On a workload API server: the deployment's InferencePool, its endpoint picker's
Deployment (run by the real deployment controller and kube-scheduler, its pod
bound to a simulated node), the HTTPRoute on the cluster's gateway (Native
clusters) and the monitors (clusters with ``spec.observability.prometheus``). On
the control plane: the pool's ModelEndpoint per cluster, weighted by the Ready
replicas there, and the ModelService's route to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.names import (
    ENDPOINT_PICKER_LABEL,
    endpoint_picker_name,
    pool_endpoint_name,
    pool_name,
)
from tests.e2e.kube import Kube, Manifest, is_true
from tests.e2e.world import ready, replicas_of, xr

INFERENCE_POOL = ("inference.networking.k8s.io/v1", "InferencePool")
INFERENCE_OBJECTIVE = ("llm-d.ai/v1alpha2", "InferenceObjective")
HTTP_ROUTE = ("gateway.networking.k8s.io/v1", "HTTPRoute")
POD_MONITOR = ("monitoring.coreos.com/v1", "PodMonitor")
SERVICE_MONITOR = ("monitoring.coreos.com/v1", "ServiceMonitor")
PROMETHEUS_RULE = ("monitoring.coreos.com/v1", "PrometheusRule")


def pool(workload: Kube, deployment: str, namespace: str) -> Manifest | None:
    """The deployment's InferencePool on ``workload``."""
    return workload.get(*INFERENCE_POOL, pool_name(deployment), namespace)


def picker_serving(workload: Kube, deployment: str, namespace: str) -> Manifest | None:
    """The endpoint picker's Deployment once it is Available with every pod bound to a node; else None.

    Available comes from the real deployment controller, the pods' Ready from kwok once
    kube-scheduler bound them: the Deployment was accepted and runs as written.
    """
    found = workload.get("apps/v1", "Deployment", endpoint_picker_name(deployment), namespace)
    if found is None or not is_true(found, "Available"):
        return None
    pods = workload.list("v1", "Pod", namespace, labels={ENDPOINT_PICKER_LABEL: pool_name(deployment)})
    bound = [p for p in pods if p.get("spec", {}).get("nodeName")]
    return found if bound and len(bound) == len(pods) else None


def pool_endpoint(kube: Kube, deployment: str, cluster: str, namespace: str) -> Manifest | None:
    """The control-plane ModelEndpoint of the deployment's pool on ``cluster``."""
    return xr(kube, "ModelEndpoint", pool_endpoint_name(deployment, cluster), namespace)


def weighted(kube: Kube, deployment: str, cluster: str, namespace: str, weight: int) -> Manifest | None:
    """The pool's ModelEndpoint once it is Ready with ``spec.weight`` ``weight``; else None."""
    found = pool_endpoint(kube, deployment, cluster, namespace)
    return found if ready(found) and (found or {}).get("spec", {}).get("weight") == weight else None


def backends(route: Mapping[str, Any] | None) -> list[str]:
    """The names of a route's backends, in order."""
    rules = (route or {}).get("spec", {}).get("rules") or []
    return [str(b["name"]) for rule in rules for b in rule.get("backendRefs") or []]


def ready_replicas_on(kube: Kube, deployment: str, cluster: str, namespace: str) -> int:
    """The deployment's Ready ModelReplicas on ``cluster``, as the control plane shows them."""
    replicas = replicas_of(kube, deployment, namespace)
    return sum(1 for r in replicas if r["spec"]["inferenceClusterRef"]["name"] == cluster and ready(r))


def unchanged(before: Mapping[str, Any], after: Mapping[str, Any] | None) -> bool:
    """Whether ``after`` is the very object ``before`` was (same uid), at the same generation and spec."""
    if after is None:
        return False
    meta, now = before["metadata"], after["metadata"]
    same = (meta["uid"], meta.get("generation"), before.get("spec"))
    return same == (now["uid"], now.get("generation"), after.get("spec"))
