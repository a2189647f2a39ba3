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

from modelplane.charts import CHARTS, Component
from modelplane.names import AI_GATEWAY_CRDS_RELEASE_KEY, AI_GATEWAY_RELEASE_KEY, helm_release_name
from modelplane.routing.gateway import GATEWAY_NAMESPACE, release_of
from modelplane.stack.overrides import NO_REGISTRY, Overrides, Registry, install

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


def ai_gateway_releases(
    owner: str, provider_config: Mapping[str, str], overrides: Overrides | None = None, registry: Registry = NO_REGISTRY
) -> dict[str, dict[str, Any]]:
    """The Releases of Envoy AI Gateway's CRDs and controller, by composition key, named ``<owner>-<component>``.

    ``overrides`` (``spec.components.aiGateway``): its version and repository apply to both charts, its
    values to the controller's only, as a workload cluster's stack installs them; ``registry`` as there.
    """
    chosen = overrides or Overrides()
    keys = {AI_GATEWAY_CRDS_RELEASE_KEY: Component.AI_GATEWAY_CRDS, AI_GATEWAY_RELEASE_KEY: Component.AI_GATEWAY}
    return {
        key: release_of(
            helm_release_name(owner, str(c)),
            provider_config,
            install(CHARTS[c], chosen, registry, user_values=c is Component.AI_GATEWAY),
        )
        for key, c in keys.items()
    }
