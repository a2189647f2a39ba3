"""The components of a ServingStack as its API names them, and what each one is made of.

A component (``spec.servingStack.components.<name>``) is one or two Helm charts of
``modelplane.charts`` (KServe and Envoy AI Gateway ship their CRDs as a chart of their
own), the objects that say it is installed when a cluster runs it already (mode
Existing), and which replicas cannot run without it (``NeededBy``), which the fleet
scheduler reads back from the cluster's status.

An installed API is told by its APIService (``<version>.<group>``), which the API server
keeps for every group and version a CustomResourceDefinition serves: it names the very
version Modelplane composes, and it is small, where a CRD's own object can exceed what an
Object's status may hold (LLMInferenceService's is over 2 MB).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from modelplane.charts import Component
from modelplane.schedulers import SCHEDULERS
from modelplane.stack.modes import Mode, NeededBy

__all__ = [
    "Mode",
    "NeededBy",
    "Probe",
    "StackComponent",
    "charts_of",
    "component_of",
    "in_stack",
    "needed_by",
    "probes",
]

APISERVICE_API_VERSION = "apiregistration.k8s.io/v1"
DEPLOYMENT_API_VERSION = "apps/v1"
DEVICE_CLASS_API_VERSION = "resource.k8s.io/v1"


class StackComponent(StrEnum):
    """A component of the stack, by its name under ``components`` (sorted by that name)."""

    AI_GATEWAY = "aiGateway"
    CERT_MANAGER = "certManager"
    DRA_DRIVER = "draDriver"
    GATEWAY = "gateway"
    KSERVE = "kserve"
    LWS = "lws"
    PROMETHEUS = "prometheus"
    SCHEDULER = "scheduler"


# Each component's charts, main chart last (the one a component's ``values`` go to).
_CHARTS: dict[StackComponent, tuple[Component, ...]] = {
    StackComponent.CERT_MANAGER: (Component.CERT_MANAGER,),
    StackComponent.GATEWAY: (Component.ENVOY_GATEWAY,),
    StackComponent.KSERVE: (Component.KSERVE_CRDS, Component.KSERVE),
    StackComponent.LWS: (Component.LWS,),
    StackComponent.DRA_DRIVER: (Component.DRA_DRIVER,),
    StackComponent.AI_GATEWAY: (Component.AI_GATEWAY_CRDS, Component.AI_GATEWAY),
    StackComponent.PROMETHEUS: (Component.KUBE_PROMETHEUS_STACK,),
}


_SPEC_REQUIRED = frozenset({"DeviceClass"})


@dataclass(frozen=True)
class Probe:
    """A remote object whose presence says a component is installed; a controller must also be Available.

    Attributes:
        api_version: The object's apiVersion.
        kind: Its kind.
        name: Its name.
        namespace: Its namespace ("" for a cluster-scoped object).
    """

    api_version: str
    kind: str
    name: str
    namespace: str = ""

    @property
    def controller(self) -> bool:
        """Whether this is a controller's Deployment, which must be Available (not only exist)."""
        return self.kind == "Deployment"

    @property
    def slug(self) -> str:
        """A short, stable, DNS-safe id within its component: ``api-<version>-<group>``, ``controller``, ..."""
        if self.kind == "APIService":
            return f"api-{self.name}".replace(".", "-")
        if self.controller:
            return "controller"
        return f"{self.kind.lower()}-{self.name}".replace(".", "-")

    def __str__(self) -> str:
        """How a message names it, e.g. ``API cert-manager.io/v1`` or ``Deployment cert-manager/cert-manager``."""
        if self.kind == "APIService":
            version, _, group = self.name.partition(".")
            return f"API {group}/{version}"
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def manifest(self) -> dict[str, Any]:
        """The object as an Observe-only Object names it: apiVersion, kind and metadata.

        A kind whose schema requires a spec (DeviceClass) gets an empty one, so the manifest is one the
        API server would take; the Object only reads the object, it never writes it.
        """
        metadata = {"name": self.name, **({"namespace": self.namespace} if self.namespace else {})}
        out: dict[str, Any] = {"apiVersion": self.api_version, "kind": self.kind, "metadata": metadata}
        if self.kind in _SPEC_REQUIRED:
            out["spec"] = {}
        return out


def _apis(*api_versions: str) -> tuple[Probe, ...]:
    """The APIServices of ``group/version`` API versions."""
    out = []
    for api_version in api_versions:
        group, _, version = api_version.rpartition("/")
        out.append(Probe(APISERVICE_API_VERSION, "APIService", f"{version}.{group}"))
    return tuple(out)


def _deployment(namespace: str, name: str) -> Probe:
    return Probe(DEPLOYMENT_API_VERSION, "Deployment", name, namespace)


# What says each component is installed (mode Existing): the API versions Modelplane composes of it
# (held to the composers' own constants by tests/unit/stack), and its controller's Deployment by default.
# The scheduler's come from its row of ``modelplane.schedulers.SCHEDULERS``.
_API: dict[StackComponent, tuple[Probe, ...]] = {
    StackComponent.CERT_MANAGER: _apis("cert-manager.io/v1"),
    StackComponent.GATEWAY: _apis("gateway.networking.k8s.io/v1", "gateway.envoyproxy.io/v1alpha1"),
    StackComponent.KSERVE: _apis("serving.kserve.io/v1alpha2"),
    StackComponent.LWS: _apis("leaderworkerset.x-k8s.io/v1"),
    # The DRA driver's kubelet plugin is a DaemonSet on the GPU nodes; its DeviceClass is what replicas claim.
    StackComponent.DRA_DRIVER: (Probe(DEVICE_CLASS_API_VERSION, "DeviceClass", "gpu.nvidia.com"),),
    StackComponent.AI_GATEWAY: _apis("aigateway.envoyproxy.io/v1beta1"),
    # prometheus-operator installs name its Deployment as they like: its API is what the monitors need.
    StackComponent.PROMETHEUS: _apis("monitoring.coreos.com/v1"),
}
_CONTROLLERS: dict[StackComponent, Probe] = {
    StackComponent.CERT_MANAGER: _deployment("cert-manager", "cert-manager"),
    StackComponent.GATEWAY: _deployment("envoy-gateway-system", "envoy-gateway"),
    StackComponent.KSERVE: _deployment("kserve", "llmisvc-controller-manager"),
    StackComponent.LWS: _deployment("lws-system", "lws-controller-manager"),
    StackComponent.AI_GATEWAY: _deployment("envoy-ai-gateway-system", "ai-gateway-controller"),
}


def in_stack(*, backend: str, scheduler: str) -> tuple[StackComponent, ...]:
    """The components a stack with ``backend`` and ``scheduler`` has, sorted by name.

    KServe only with the KServe backend, the scheduler only with one (``scheduler`` other than None).
    """
    out = set(StackComponent)
    if backend != "KServe":
        out.discard(StackComponent.KSERVE)
    if not SCHEDULERS.get(scheduler, SCHEDULERS["None"]).charts:
        out.discard(StackComponent.SCHEDULER)
    return tuple(sorted(out))


def charts_of(component: StackComponent, *, scheduler: str) -> tuple[Component, ...]:
    """The charts of ``component``, its main chart last (the scheduler's from its row of ``SCHEDULERS``)."""
    if component is StackComponent.SCHEDULER:
        row = SCHEDULERS.get(scheduler)
        return tuple(Component(c) for c in row.charts) if row is not None else ()
    return _CHARTS[component]


def component_of(chart: Component) -> StackComponent:
    """The component a chart belongs to (KAI's and Kueue's: the scheduler)."""
    for component, charts in _CHARTS.items():
        if chart in charts:
            return component
    return StackComponent.SCHEDULER


def probes(
    component: StackComponent, *, scheduler: str, controller: tuple[str, str] | None = None
) -> tuple[Probe, ...]:
    """What mode Existing checks of ``component``: its API objects, then its controller's Deployment, if any.

    Args:
        component: The component.
        scheduler: The cluster's ``spec.scheduler.type`` (the scheduler component's row).
        controller: The user's ``controller`` (namespace, name), instead of the component's default.
    """
    if component is StackComponent.SCHEDULER:
        row = SCHEDULERS.get(scheduler)
        api = _apis(*row.apis) if row is not None else ()
        default = _deployment(*row.controller) if row is not None and row.controller is not None else None
    else:
        api, default = _API[component], _CONTROLLERS.get(component)
    chosen = _deployment(*controller) if controller is not None else default
    return (*api, *((chosen,) if chosen is not None else ()))


def needed_by(component: StackComponent, *, backend: str, secure_gateway: bool) -> NeededBy:
    """Which replicas cannot run on a cluster without ``component``.

    cert-manager issues KServe's webhook certificates and the gateway's own (unless it serves plain HTTP);
    KServe's controller needs LeaderWorkerSet, a Native cluster only for multi-node workers; Envoy AI
    Gateway is the gateway's route to InferencePools; Prometheus only watches.
    """
    if component is StackComponent.CERT_MANAGER:
        return NeededBy.ALL if backend == "KServe" or secure_gateway else NeededBy.NONE
    if component is StackComponent.LWS:
        return NeededBy.ALL if backend == "KServe" else NeededBy.MULTI_NODE
    if component is StackComponent.AI_GATEWAY:
        return NeededBy.POOL_ROUTING
    if component is StackComponent.PROMETHEUS:
        return NeededBy.NONE
    return NeededBy.ALL
