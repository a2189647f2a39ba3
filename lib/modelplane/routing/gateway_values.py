"""What an InferenceGateway adds to its Envoy Gateway install: Redis counters and Envoy AI Gateway.

``spec.rateLimit.redis`` becomes the EnvoyGateway configuration's rate-limit backend (Envoy Gateway then
runs its rate-limit service, which global limits need). ``spec.aiGateway: Enabled`` installs Envoy AI
Gateway's two charts (pinned in ``modelplane.charts``) on the control plane and registers its controller
as Envoy Gateway's extension server, the values its install guide gives ``gateway-helm``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.charts import CHARTS, Chart, Component
from modelplane.names import AI_GATEWAY_CRDS_RELEASE_KEY, AI_GATEWAY_RELEASE_KEY, helm_release_name
from modelplane.routing.gateway import GATEWAY_NAMESPACE, RELEASE_API_VERSION, RELEASE_NAMESPACE

# Envoy AI Gateway's controller, which Envoy Gateway calls while translating routes (its install guide).
_AI_GATEWAY_EXTENSION: Mapping[str, Any] = {
    "extensionApis": {"enableEnvoyPatchPolicy": True},
    "extensionManager": {
        "hooks": {
            "xdsTranslator": {
                "translation": {
                    "listener": {"includeAll": True},
                    "route": {"includeAll": True},
                    "cluster": {"includeAll": True},
                    "secret": {"includeAll": True},
                },
                "post": ["Translation", "Cluster", "Route"],
            }
        },
        "service": {
            "fqdn": {"hostname": "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local", "port": 1063}
        },
    },
}


@dataclass(frozen=True)
class Redis:
    """Where the rate-limit service counts: ``host:port``, and the TLS client certificate Secret (if any)."""

    address: str
    certificate: str | None = None  # a kubernetes.io/tls Secret in GATEWAY_NAMESPACE


@dataclass(frozen=True)
class Extras:
    """What ``spec.rateLimit`` and ``spec.aiGateway`` add to the install."""

    redis: Redis | None = None
    ai_gateway: bool = False


def envoy_gateway_values(extras: Extras) -> dict[str, Any]:
    """The ``config.envoyGateway`` values ``extras`` adds to Envoy Gateway's chart (empty when none)."""
    config: dict[str, Any] = {}
    if extras.redis is not None:
        redis: dict[str, Any] = {"url": extras.redis.address}
        if extras.redis.certificate:
            redis["tls"] = {
                "certificateRef": {
                    "group": "",
                    "kind": "Secret",
                    "name": extras.redis.certificate,
                    "namespace": GATEWAY_NAMESPACE,
                }
            }
        config["rateLimit"] = {"backend": {"type": "Redis", "redis": redis}}
    if extras.ai_gateway:
        config.update(_AI_GATEWAY_EXTENSION)
    return {"config": {"envoyGateway": config}} if config else {}


def ai_gateway_releases(owner: str, provider_config: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The Releases of Envoy AI Gateway's CRDs and controller, by composition key, named ``<owner>-<component>``."""
    keys = {AI_GATEWAY_CRDS_RELEASE_KEY: Component.AI_GATEWAY_CRDS, AI_GATEWAY_RELEASE_KEY: Component.AI_GATEWAY}
    return {key: _release(helm_release_name(owner, str(c)), CHARTS[c], provider_config) for key, c in keys.items()}


def _release(name: str, chart: Chart, provider_config: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": RELEASE_API_VERSION,
        "kind": "Release",
        "metadata": {"name": name, "namespace": RELEASE_NAMESPACE},
        "spec": {
            "forProvider": {
                "chart": {"name": chart.name, "repository": chart.repository, "version": chart.version},
                "namespace": chart.namespace,
                "values": dict(chart.values),
            },
            "providerConfigRef": dict(provider_config),
        },
    }
