"""The Helm charts of a ServingStack, pinned in one place, and the order they install in.

Every component of the stack is one row of ``CHARTS``: its chart, the version
Modelplane is tested with, the namespace it installs into and the components it
depends on. ``stack_components`` picks the rows a cluster needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from modelplane.schedulers import SCHEDULERS


class Component(StrEnum):
    """The parts of a ServingStack, each one Helm release."""

    CERT_MANAGER = "cert-manager"
    LWS = "lws"
    ENVOY_GATEWAY = "envoy-gateway"
    DRA_DRIVER = "nvidia-dra-driver"
    KSERVE_CRDS = "kserve-llmisvc-crd"
    KSERVE = "kserve-llmisvc"
    KAI = "kai-scheduler"
    KUEUE = "kueue"
    AI_GATEWAY_CRDS = "envoy-ai-gateway-crd"
    AI_GATEWAY = "envoy-ai-gateway"
    KUBE_PROMETHEUS_STACK = "kube-prometheus-stack"


# Envoy Gateway calls an InferencePool's endpoint picker through Envoy AI Gateway, its extension server:
# routes whose backendRef is an InferencePool are handed to it (failOpen: without it the rest still routes).
_INFERENCE_POOL_EXTENSION: Mapping[str, Any] = {
    "config": {
        "envoyGateway": {
            "extensionManager": {
                "backendResources": [
                    {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
                ],
                "hooks": {"xdsTranslator": {"post": ["Translation", "Cluster", "Route"]}},
                "service": {
                    "fqdn": {
                        "hostname": "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local",
                        "port": 1063,
                    }
                },
                "failOpen": True,
            }
        }
    }
}
# Managed Prometheus scrapes every PodMonitor, ServiceMonitor and PrometheusRule, not only the chart's own.
_PROMETHEUS_VALUES: Mapping[str, Any] = {
    "prometheus": {
        "prometheusSpec": {
            "podMonitorSelectorNilUsesHelmValues": False,
            "serviceMonitorSelectorNilUsesHelmValues": False,
            "ruleSelectorNilUsesHelmValues": False,
        }
    }
}


@dataclass(frozen=True)
class Chart:
    """One pinned Helm chart.

    Attributes:
        component: The component the chart installs.
        repository: The chart repository (an ``oci://`` registry or an HTTP repository).
        name: The chart's name in the repository.
        version: The pinned chart version.
        namespace: The namespace the release installs into.
        depends_on: Components that must be Ready before this one is installed.
        values: Helm values Modelplane always sets.
    """

    component: Component
    repository: str
    name: str
    version: str
    namespace: str
    depends_on: tuple[Component, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)


CHARTS: dict[Component, Chart] = {
    c.component: c
    for c in (
        Chart(
            Component.CERT_MANAGER,
            "https://charts.jetstack.io",
            "cert-manager",
            "v1.18.2",
            "cert-manager",
            values={"crds": {"enabled": True}},
        ),
        Chart(Component.LWS, "oci://registry.k8s.io/lws/charts", "lws", "0.7.0", "lws-system"),
        Chart(
            Component.ENVOY_GATEWAY,
            "oci://docker.io/envoyproxy",
            "gateway-helm",
            "v1.5.1",
            "envoy-gateway-system",
            values=_INFERENCE_POOL_EXTENSION,
        ),
        Chart(
            Component.AI_GATEWAY_CRDS,
            "oci://docker.io/envoyproxy",
            "ai-gateway-crds-helm",
            "v1.1.0",
            "envoy-ai-gateway-system",
        ),
        Chart(
            Component.AI_GATEWAY,
            "oci://docker.io/envoyproxy",
            "ai-gateway-helm",
            "v1.1.0",
            "envoy-ai-gateway-system",
            depends_on=(Component.AI_GATEWAY_CRDS, Component.ENVOY_GATEWAY),
        ),
        # Ships prometheus-operator v0.93.0, whose CRDs the composed monitors are validated against.
        Chart(
            Component.KUBE_PROMETHEUS_STACK,
            "https://prometheus-community.github.io/helm-charts",
            "kube-prometheus-stack",
            "88.0.0",
            "monitoring",
            values=_PROMETHEUS_VALUES,
        ),
        Chart(
            Component.DRA_DRIVER,
            "https://helm.ngc.nvidia.com/nvidia",
            "nvidia-dra-driver-gpu",
            "25.3.2",
            "nvidia-dra-driver-gpu",
            values={"gpuResourcesEnabledOverride": True, "resources": {"gpus": {"enabled": True}}},
        ),
        Chart(
            Component.KSERVE_CRDS,
            "oci://ghcr.io/kserve/charts",
            "kserve-llmisvc-crd",
            "v0.16.0",
            "kserve",
        ),
        Chart(
            Component.KSERVE,
            "oci://ghcr.io/kserve/charts",
            "kserve-llmisvc-resources",
            "v0.16.0",
            "kserve",
            depends_on=(Component.CERT_MANAGER, Component.KSERVE_CRDS, Component.LWS, Component.ENVOY_GATEWAY),
        ),
        Chart(Component.KAI, "oci://ghcr.io/nvidia/kai-scheduler", "kai-scheduler", "v0.9.3", "kai-scheduler"),
        Chart(Component.KUEUE, "oci://registry.k8s.io/kueue/charts", "kueue", "0.13.4", "kueue-system"),
    )
}

_BY_BACKEND: dict[str, tuple[Component, ...]] = {
    "KServe": (Component.CERT_MANAGER, Component.KSERVE_CRDS, Component.KSERVE),
    "Native": (),
}


def stack_components(*, backend: str, scheduler: str, prometheus: str = "None") -> tuple[Chart, ...]:
    """The charts a cluster with ``backend``, ``scheduler`` and ``prometheus`` needs, dependencies first.

    Args:
        backend: The serving backend (``KServe`` or ``Native``).
        scheduler: The scheduler type (a row of ``modelplane.schedulers.SCHEDULERS``).
        prometheus: The cluster's ``spec.observability.prometheus``: ``Managed`` adds kube-prometheus-stack.

    Returns:
        The charts in install order: each after every chart it depends on, ties by component name.

    Raises:
        ValueError: an unknown backend or scheduler.
    """
    row = SCHEDULERS.get(scheduler)
    if backend not in _BY_BACKEND or row is None:
        msg = f"no serving stack for backend {backend!r} and scheduler {scheduler!r}"
        raise ValueError(msg)
    wanted = {Component.LWS, Component.ENVOY_GATEWAY, Component.DRA_DRIVER}
    # The workload gateway's certificate is issued by cert-manager (modelplane.routing.workload_tls).
    wanted.add(Component.CERT_MANAGER)
    wanted |= {Component.AI_GATEWAY_CRDS, Component.AI_GATEWAY}  # the gateway calls endpoint pickers through it
    if prometheus == "Managed":
        wanted.add(Component.KUBE_PROMETHEUS_STACK)
    wanted |= set(_BY_BACKEND[backend]) | {Component(c) for c in row.charts}
    ordered: list[Chart] = []
    placed: set[Component] = set()
    while len(ordered) < len(wanted):
        ready = sorted(c for c in wanted - placed if set(CHARTS[c].depends_on) <= placed)
        if not ready:
            msg = f"the charts {sorted(wanted - placed)} depend on charts the stack does not install"
            raise ValueError(msg)
        placed.update(ready)
        ordered.extend(CHARTS[c] for c in ready)
    return tuple(ordered)
