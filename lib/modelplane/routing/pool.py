"""A deployment's InferencePool on one workload cluster, its endpoint picker and its route.

One pool per (deployment, cluster), never per replica: it selects every serving
pod of the deployment there by label (unified pods, or decode pods for
disaggregated serving, leaders only for multi-node workers), so a replica that
comes or goes changes the pods the pool finds, never the pool's objects. The
endpoint picker (llm-d router, pinned) is a Deployment with its ServiceAccount,
the least RBAC it needs (read pods, the pool and its objectives; leases for
leader election with several pods) and a ConfigMap with its
EndpointPickerConfig; its Service serves ext-proc (9002), health (9003) and
metrics (9090). An HTTPRoute on the cluster's gateway sends the pool's virtual
host to the pool.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from modelplane.backends.model import Remote
from modelplane.monitoring import LWS_WORKER_INDEX_LABEL, fleet_rules, service_monitor
from modelplane.names import (
    DEPLOYMENT_LABEL,
    ENDPOINT_PICKER_LABEL,
    ROLE_LABEL,
    WORKLOAD_GATEWAY_NAME,
    WORKLOAD_GATEWAY_NAMESPACE,
    endpoint_picker_name,
    pool_host,
    pool_name,
)
from modelplane.routing.picker import ENGINE_METRIC_FLAGS, Engine, Picker

POOL_API_VERSION = "inference.networking.k8s.io/v1"
POOL_GROUP = "inference.networking.k8s.io"
OBJECTIVE_API_VERSION = "llm-d.ai/v1alpha2"
# llm-d router, pinned: the release whose InferenceObjective CRD the composed objects validate against.
PICKER_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
EXT_PROC_PORT, HEALTH_PORT, METRICS_PORT = 9002, 9003, 9090
CONFIG_FILE = "config.yaml"
CONFIG_DIR = "/config"
# The pod template carries its config's hash, so a config change rolls the picker's pods.
CONFIG_HASH_ANNOTATION = "modelplane.ai/endpoint-picker-config"


@dataclass(frozen=True)
class PoolWork:
    """One deployment's pool on one cluster, resolved.

    Attributes:
        deployment: The ModelDeployment's name.
        namespace: Its namespace (also on the workload cluster).
        cluster: The InferenceCluster.
        role: The serving role whose pods the pool selects (``unified`` or ``decode``).
        port: The engines' serving port.
        nodes_per_worker: Of the serving role; above 1 only each group's leader is selected.
        engine: The engine the pods run (which metrics the picker reads).
        picker: The endpoint picker's settings.
        config: Its EndpointPickerConfig.
        priority: The deployment's InferenceObjective priority, if any.
        monitors: Whether to compose the picker's ServiceMonitor and the deployment's PrometheusRule.
        route: Whether to compose the HTTPRoute (a KServe backend's LLMInferenceServices route to the pool).
    """

    deployment: str
    namespace: str
    cluster: str
    role: str
    port: int
    nodes_per_worker: int
    engine: Engine
    picker: Picker
    config: Mapping[str, Any]
    priority: int | None = None
    monitors: bool = False
    route: bool = True


def pool_objects(work: PoolWork) -> tuple[Remote, ...]:
    """Every object of the pool for its workload cluster, each under a stable part name (``Remote.key``)."""
    pool, epp = pool_name(work.deployment), endpoint_picker_name(work.deployment)
    labels = {DEPLOYMENT_LABEL: work.deployment}
    picker_labels = {**labels, ENDPOINT_PICKER_LABEL: pool}
    config_text = _config_text(work.config)
    out = [
        Remote("inferencepool", _pool(work, pool, epp, labels)),
        Remote("epp-config", _meta("v1", "ConfigMap", epp, work.namespace, labels, data={CONFIG_FILE: config_text})),
        Remote("epp-serviceaccount", _meta("v1", "ServiceAccount", epp, work.namespace, labels)),
        Remote("epp-role", _role(work, epp, labels)),
        Remote("epp-rolebinding", _binding(work, epp, labels)),
        Remote("epp", _picker(work, pool, epp, picker_labels, config_text)),
        Remote("epp-service", _service(work, epp, picker_labels)),
    ]
    if work.route:
        out.append(Remote("route", _route(work, pool, labels)))
    if work.priority is not None:
        spec = {"priority": work.priority, "poolRef": {"group": POOL_GROUP, "kind": "InferencePool", "name": pool}}
        out.append(
            Remote(
                "objective",
                _meta(OBJECTIVE_API_VERSION, "InferenceObjective", pool, work.namespace, labels, spec=spec),
            )
        )
    if work.monitors:
        out.append(Remote("epp-monitor", service_monitor(epp, work.namespace, picker_labels, labels, "metrics")))
        rules = fleet_rules(pool, work.namespace, work.deployment, work.cluster, work.engine, labels)
        out.append(Remote("rules", rules))
    return tuple(out)


def _config_text(config: Mapping[str, Any]) -> str:
    """The picker's config file: YAML in the config's own key order, dumped once per distinct config.

    Dumping YAML was most of a ModelDeployment call (every call composes every cluster's pool, and
    the configs are few): remembered by the config's JSON, which keeps that order.
    """
    try:
        key = json.dumps(config)
    except (TypeError, ValueError):
        return yaml.safe_dump(dict(config), sort_keys=False)
    return _dumped(key)


@functools.lru_cache(maxsize=256)
def _dumped(config_json: str) -> str:
    return yaml.safe_dump(json.loads(config_json), sort_keys=False)


def pool_selector(work: PoolWork) -> dict[str, str]:
    """The labels of the pods the pool selects: the deployment's pods of the serving role."""
    selector = {DEPLOYMENT_LABEL: work.deployment, ROLE_LABEL: work.role}
    if work.nodes_per_worker > 1:
        selector[LWS_WORKER_INDEX_LABEL] = "0"
    return selector


def _meta(
    api_version: str,
    kind: str,
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    **body: Any,  # noqa: ANN401 - top-level fields of the manifest
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        **body,
    }


def _pool(work: PoolWork, pool: str, epp: str, labels: Mapping[str, str]) -> dict[str, Any]:
    spec = {
        "selector": {"matchLabels": pool_selector(work)},
        "targetPorts": [{"number": work.port}],
        "endpointPickerRef": {
            "kind": "Service",
            "name": epp,
            "port": {"number": EXT_PROC_PORT},
            "failureMode": work.picker.failure_mode,
        },
    }
    return _meta(POOL_API_VERSION, "InferencePool", pool, work.namespace, labels, spec=spec)


def _role(work: PoolWork, epp: str, labels: Mapping[str, str]) -> dict[str, Any]:
    read = ["get", "list", "watch"]
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": read},
        {"apiGroups": [POOL_GROUP], "resources": ["inferencepools"], "verbs": read},
        {"apiGroups": ["llm-d.ai"], "resources": ["inferenceobjectives", "inferencemodelrewrites"], "verbs": read},
    ]
    if work.picker.replicas > 1:
        rules.append(
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
        )
    return _meta("rbac.authorization.k8s.io/v1", "Role", epp, work.namespace, labels, rules=rules)


def _binding(work: PoolWork, epp: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return _meta(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        epp,
        work.namespace,
        labels,
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": epp},
        subjects=[{"kind": "ServiceAccount", "name": epp, "namespace": work.namespace}],
    )


def _picker(work: PoolWork, pool: str, epp: str, labels: Mapping[str, str], config_text: str) -> dict[str, Any]:
    args = [
        f"--pool-name={pool}",
        f"--pool-namespace={work.namespace}",
        f"--pool-group={POOL_GROUP}",
        f"--config-file={CONFIG_DIR}/{CONFIG_FILE}",
        f"--grpc-port={EXT_PROC_PORT}",
        f"--grpc-health-port={HEALTH_PORT}",
        f"--metrics-port={METRICS_PORT}",
        *ENGINE_METRIC_FLAGS[work.engine],
    ]
    if work.picker.replicas > 1:
        args.append("--ha-enable-leader-election")
    probe = {"grpc": {"port": HEALTH_PORT, "service": "inference-extension"}, "periodSeconds": 5}
    container = {
        "name": "epp",
        "image": PICKER_IMAGE,
        "args": args,
        "ports": [
            {"name": "grpc", "containerPort": EXT_PROC_PORT, "protocol": "TCP"},
            {"name": "grpc-health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        "readinessProbe": probe,
        "livenessProbe": {**probe, "initialDelaySeconds": 5},
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
    }
    digest = hashlib.sha256(config_text.encode()).hexdigest()[:16]
    template = {
        "metadata": {"labels": dict(labels), "annotations": {CONFIG_HASH_ANNOTATION: digest}},
        "spec": {
            "serviceAccountName": epp,
            "containers": [container],
            "volumes": [{"name": "config", "configMap": {"name": epp}}],
        },
    }
    spec = {
        "replicas": work.picker.replicas,
        "selector": {"matchLabels": {ENDPOINT_PICKER_LABEL: pool}},
        "template": template,
    }
    return _meta("apps/v1", "Deployment", epp, work.namespace, labels, spec=spec)


def _service(work: PoolWork, epp: str, labels: Mapping[str, str]) -> dict[str, Any]:
    ports = [
        {"name": "grpc", "port": EXT_PROC_PORT, "targetPort": EXT_PROC_PORT, "protocol": "TCP", "appProtocol": "http2"},
        {"name": "grpc-health", "port": HEALTH_PORT, "targetPort": HEALTH_PORT, "protocol": "TCP"},
        {"name": "metrics", "port": METRICS_PORT, "targetPort": METRICS_PORT, "protocol": "TCP"},
    ]
    selector = {ENDPOINT_PICKER_LABEL: labels[ENDPOINT_PICKER_LABEL]}
    return _meta("v1", "Service", epp, work.namespace, labels, spec={"selector": selector, "ports": ports})


def _route(work: PoolWork, pool: str, labels: Mapping[str, str]) -> dict[str, Any]:
    rule = {
        "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
        "backendRefs": [{"group": POOL_GROUP, "kind": "InferencePool", "name": pool}],
        # "0s" disables the request timeout: a token stream may run for minutes.
        "timeouts": {"request": "0s"},
    }
    spec = {
        "parentRefs": [{"name": WORKLOAD_GATEWAY_NAME, "namespace": WORKLOAD_GATEWAY_NAMESPACE}],
        "hostnames": [pool_host(work.deployment, work.namespace)],
        "rules": [rule],
    }
    return _meta("gateway.networking.k8s.io/v1", "HTTPRoute", pool, work.namespace, labels, spec=spec)
