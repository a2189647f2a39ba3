"""The control-plane gateway: Envoy Gateway's Helm release, its GatewayClass and Gateway.

Every InferenceGateway installs Envoy Gateway, so its implementation's
limits are known here (see ``SUPPORTS_BACKEND_PATH_REWRITE``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.charts import CHARTS, Component
from modelplane.layout import CONDITION, Layout
from modelplane.stack.overrides import NO_REGISTRY, Install, Overrides, Registry, install, merge_values

GATEWAY_API_VERSION = "gateway.networking.k8s.io/v1"
GATEWAY_GROUP = "gateway.networking.k8s.io"
REFERENCE_GRANT_API_VERSION = "gateway.networking.k8s.io/v1beta1"
RELEASE_API_VERSION = "helm.m.crossplane.io/v1beta1"

# Envoy Gateway, the same chart and version as on workload clusters (one row of ``modelplane.charts``).
CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
_CHART = CHARTS[Component.ENVOY_GATEWAY]
CHART_REPOSITORY, CHART_NAME, CHART_VERSION = _CHART.repository, _CHART.name, _CHART.version
# Envoy Gateway's documented install namespace: the chart runs here and the Gateway lives here.
GATEWAY_NAMESPACE = "envoy-gateway-system"
# Where the Release managed resource lives: a namespace that exists wherever Crossplane runs.
RELEASE_NAMESPACE = "crossplane-system"
# The Backend API, which ModelEndpoints compose, is off in Envoy Gateway unless enabled.
CHART_VALUES: Mapping[str, Any] = {"config": {"envoyGateway": {"extensionApis": {"enableBackend": True}}}}

# What the InferenceGateway function reads of the Release, GatewayClass and Gateway it observes.
OBSERVED: Layout = {"status": {"conditions": [CONDITION], "addresses": [{"value": str}]}}

# Envoy Gateway rewrites the host per backendRef (since v1.7) but not the path: Envoy's weighted
# clusters have no per-cluster prefix rewrite, and v1.9 rejects a backendRef URLRewrite with a path.
SUPPORTS_BACKEND_PATH_REWRITE: Mapping[str, bool] = {CONTROLLER_NAME: False}


@dataclass(frozen=True)
class Listener:
    """A Gateway listener: HTTP, or HTTPS terminating TLS with a certificate Secret."""

    port: int
    certificate: tuple[str, str] | None = None  # (namespace, name) of a kubernetes.io/tls Secret

    @property
    def name(self) -> str:
        """The listener's name (also its protocol, lower case)."""
        return "https" if self.certificate else "http"


@dataclass(frozen=True)
class GatewayRef:
    """Where an InferenceGateway's Gateway lives."""

    name: str
    namespace: str = GATEWAY_NAMESPACE


def gateway_ref(inference_gateway: str) -> GatewayRef:
    """The Gateway an InferenceGateway composes: same name, in Envoy Gateway's namespace."""
    return GatewayRef(inference_gateway)


def release(
    name: str,
    provider_config: Mapping[str, str],
    values: Mapping[str, Any] | None = None,
    overrides: Overrides | None = None,
    registry: Registry = NO_REGISTRY,
) -> dict[str, Any]:
    """The provider-helm Release that installs Envoy Gateway on the control plane.

    Our values (``CHART_VALUES``, then ``values`` merged over them), then ``registry``'s image
    mirror, then the InferenceGateway's ``spec.components.gateway`` (``overrides``: version,
    repository, values merged over ours), as a workload cluster's stack installs the same chart.
    """
    chosen = install(_CHART, overrides or Overrides(), registry, base_values=merge_values(CHART_VALUES, values or {}))
    return release_of(name, provider_config, chosen)


def release_of(name: str, provider_config: Mapping[str, str], chosen: Install) -> dict[str, Any]:
    """The Release of one chart installed on the control plane (``chosen``: its row, with overrides and mirrors)."""
    chart: dict[str, Any] = {"name": chosen.chart.name, "repository": chosen.repository, "version": chosen.version}
    if chosen.pull_secret:
        chart["pullSecretRef"] = {"name": chosen.pull_secret}
    return {
        "apiVersion": RELEASE_API_VERSION,
        "kind": "Release",
        "metadata": {"name": name, "namespace": RELEASE_NAMESPACE},
        "spec": {
            "forProvider": {"chart": chart, "namespace": chosen.chart.namespace, "values": dict(chosen.values)},
            "providerConfigRef": dict(provider_config),
        },
    }


def gateway_class(name: str) -> dict[str, Any]:
    """The GatewayClass Envoy Gateway serves."""
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "GatewayClass",
        "metadata": {"name": name},
        "spec": {"controllerName": CONTROLLER_NAME},
    }


def gateway(ref: GatewayRef, class_name: str, listeners: tuple[Listener, ...]) -> dict[str, Any]:
    """The Gateway ModelService routes attach to, from any namespace."""
    allowed = {"namespaces": {"from": "All"}, "kinds": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute"}]}
    out = []
    for listener in listeners:
        spec: dict[str, Any] = {
            "name": listener.name,
            "protocol": listener.name.upper(),
            "port": listener.port,
            "allowedRoutes": allowed,
        }
        if listener.certificate:
            namespace, secret = listener.certificate
            spec["tls"] = {
                "mode": "Terminate",
                "certificateRefs": [{"group": "", "kind": "Secret", "name": secret, "namespace": namespace}],
            }
        out.append(spec)
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {"name": ref.name, "namespace": ref.namespace},
        "spec": {"gatewayClassName": class_name, "listeners": out},
    }


def certificate_grant(name: str, ref: GatewayRef, certificate: tuple[str, str]) -> dict[str, Any] | None:
    """The ReferenceGrant that lets the Gateway read a certificate in another namespace; None in its own."""
    namespace, secret = certificate
    if namespace == ref.namespace:
        return None
    return {
        "apiVersion": REFERENCE_GRANT_API_VERSION,
        "kind": "ReferenceGrant",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "from": [{"group": GATEWAY_GROUP, "kind": "Gateway", "namespace": ref.namespace}],
            "to": [{"group": "", "kind": "Secret", "name": secret}],
        },
    }


def address(observed_gateway: Mapping[str, Any] | None, http_port: int) -> str | None:
    """The base URL clients reach the Gateway at: ``http://`` + its first address (+ port if not 80).

    ``observed_gateway`` is conformed to ``OBSERVED``.
    """
    addresses = ((observed_gateway or {}).get("status") or {}).get("addresses") or []
    value = str(addresses[0].get("value") or "") if addresses else ""
    if not value:
        return None
    host = f"[{value}]" if ":" in value else value
    return f"http://{host}" if http_port == 80 else f"http://{host}:{http_port}"
