"""The Helm charts Modelplane installs, pinned in one place, and the order they install in.

Every chart is one row of ``CHARTS``: the component it installs, the version Modelplane
is tested with and why, the namespace it installs into, the components it depends on, the
values Modelplane always sets and the image values a registry mirror rewrites. The same row
serves every cluster that installs the chart: a workload cluster's ServingStack and, for
Envoy Gateway and Envoy AI Gateway, the control plane's InferenceGateway.
``stack_components`` picks the rows a workload cluster needs; the README's table of
defaults lists them all.
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
class ImageValue:
    """A chart value that names an image (or the registry its images come from), as the chart's default has it.

    Attributes:
        path: The value's keys, outermost first, e.g. ``("webhook", "image", "repository")``.
        upstream: Its default, e.g. ``quay.io/jetstack/cert-manager-webhook``, or a bare registry
            (``docker.io``) for a chart's global registry setting.
    """

    path: tuple[str, ...]
    upstream: str


@dataclass(frozen=True)
class Chart:
    """One pinned Helm chart.

    Attributes:
        component: The component the chart installs.
        repository: The chart repository (an ``oci://`` registry or an HTTP repository).
        name: The chart's name in the repository.
        version: The pinned chart version.
        namespace: The namespace the release installs into.
        why: Why this version (the README's table of defaults says the same).
        depends_on: Components that must be Ready before this one is installed.
        values: Helm values Modelplane always sets.
        images: The values naming the chart's images, rewritten to a registry mirror
            (``modelplane.stack.overrides``); the layout of the pinned version.
    """

    component: Component
    repository: str
    name: str
    version: str
    namespace: str
    why: str = ""
    depends_on: tuple[Component, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)
    images: tuple[ImageValue, ...] = ()


_JETSTACK = "quay.io/jetstack"

CHARTS: dict[Component, Chart] = {
    c.component: c
    for c in (
        Chart(
            Component.CERT_MANAGER,
            "https://charts.jetstack.io",
            "cert-manager",
            "v1.18.2",
            "cert-manager",
            why="serves cert-manager.io/v1, the workload gateway's certificate chain; its CRDs come with the chart",
            values={"crds": {"enabled": True}},
            images=(
                ImageValue(("image", "repository"), f"{_JETSTACK}/cert-manager-controller"),
                ImageValue(("webhook", "image", "repository"), f"{_JETSTACK}/cert-manager-webhook"),
                ImageValue(("cainjector", "image", "repository"), f"{_JETSTACK}/cert-manager-cainjector"),
                ImageValue(("acmesolver", "image", "repository"), f"{_JETSTACK}/cert-manager-acmesolver"),
                ImageValue(("startupapicheck", "image", "repository"), f"{_JETSTACK}/cert-manager-startupapicheck"),
            ),
        ),
        Chart(
            Component.LWS,
            "oci://registry.k8s.io/lws/charts",
            "lws",
            "0.10.0",
            "lws-system",
            why="the release whose LeaderWorkerSet CRD (v1) composed multi-node workloads are validated against",
            images=(ImageValue(("image", "manager", "repository"), "registry.k8s.io/lws/lws"),),
        ),
        # One version on the control plane (InferenceGateway) and on workload clusters.
        Chart(
            Component.ENVOY_GATEWAY,
            "oci://docker.io/envoyproxy",
            "gateway-helm",
            "v1.9.0",
            "envoy-gateway-system",
            why=(
                "the release whose CRDs composed Backends, SecurityPolicies and BackendTrafficPolicies are "
                "validated against, on the control plane and workload clusters alike"
            ),
            values=_INFERENCE_POOL_EXTENSION,
            images=(ImageValue(("global", "imageRegistry"), "docker.io"),),
        ),
        Chart(
            Component.AI_GATEWAY_CRDS,
            "oci://docker.io/envoyproxy",
            "ai-gateway-crds-helm",
            "v1.1.0",
            "envoy-ai-gateway-system",
            why="the CRDs of ai-gateway-helm, same release",
        ),
        Chart(
            Component.AI_GATEWAY,
            "oci://docker.io/envoyproxy",
            "ai-gateway-helm",
            "v1.1.0",
            "envoy-ai-gateway-system",
            why="the release whose CRDs composed AIGatewayRoutes and BackendSecurityPolicies are validated against",
            depends_on=(Component.AI_GATEWAY_CRDS, Component.ENVOY_GATEWAY),
            images=(
                ImageValue(("controller", "image", "repository"), "docker.io/envoyproxy/ai-gateway-controller"),
                ImageValue(("extProc", "image", "repository"), "docker.io/envoyproxy/ai-gateway-extproc"),
            ),
        ),
        Chart(
            Component.KUBE_PROMETHEUS_STACK,
            "https://prometheus-community.github.io/helm-charts",
            "kube-prometheus-stack",
            "88.0.0",
            "monitoring",
            why="ships prometheus-operator v0.93.0, whose CRDs the composed monitors are validated against",
            values=_PROMETHEUS_VALUES,
            images=(ImageValue(("global", "imageRegistry"), "quay.io"),),
        ),
        Chart(
            Component.DRA_DRIVER,
            "https://helm.ngc.nvidia.com/nvidia",
            "nvidia-dra-driver-gpu",
            "25.3.2",
            "nvidia-dra-driver-gpu",
            why="allocates GPUs through DRA (gpuResourcesEnabledOverride), DeviceClass gpu.nvidia.com",
            values={"gpuResourcesEnabledOverride": True, "resources": {"gpus": {"enabled": True}}},
            images=(ImageValue(("image", "repository"), "nvcr.io/nvidia/k8s-dra-driver-gpu"),),
        ),
        Chart(
            Component.KSERVE_CRDS,
            "oci://ghcr.io/kserve/charts",
            "kserve-llmisvc-crd",
            "v0.20.0",
            "kserve",
            why="the CRDs of kserve-llmisvc-resources, same release",
        ),
        Chart(
            Component.KSERVE,
            "oci://ghcr.io/kserve/charts",
            "kserve-llmisvc-resources",
            "v0.20.0",
            "kserve",
            why=(
                "the release whose LLMInferenceService CRD serves serving.kserve.io/v1alpha2, the version KServe "
                "replicas compose and are validated against"
            ),
            depends_on=(Component.CERT_MANAGER, Component.KSERVE_CRDS, Component.LWS, Component.ENVOY_GATEWAY),
            images=(
                ImageValue(("kserve", "llmisvc", "controller", "image"), "kserve/llmisvc-controller"),
                ImageValue(("kserve", "storage", "image"), "kserve/storage-initializer"),
            ),
        ),
        Chart(
            Component.KAI,
            "oci://ghcr.io/kai-scheduler/kai-scheduler",
            "kai-scheduler",
            "v0.17.0",
            "kai-scheduler",
            why=(
                "the release whose Queue (v2) and PodGroup (v2alpha2) CRDs capacity and replicas are validated "
                "against; KAI's charts moved to ghcr.io/kai-scheduler"
            ),
            images=(ImageValue(("global", "registry"), "ghcr.io/kai-scheduler/kai-scheduler"),),
        ),
        Chart(
            Component.KUEUE,
            "oci://registry.k8s.io/kueue/charts",
            "kueue",
            "0.19.2",
            "kueue-system",
            why=(
                "the release whose CRDs serve kueue.x-k8s.io/v1beta2, the version the observed ClusterQueue and "
                "ResourceFlavors are read in and validated against"
            ),
            images=(
                ImageValue(("controllerManager", "manager", "image", "repository"), "registry.k8s.io/kueue/kueue"),
            ),
        ),
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
