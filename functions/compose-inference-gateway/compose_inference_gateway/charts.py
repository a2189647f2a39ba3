"""``spec.components`` and ``spec.registry`` of an InferenceGateway: the charts it installs, as a stack installs them.

The control plane's Envoy Gateway and Envoy AI Gateway are rows of the same chart table
(``modelplane.charts``) as a workload cluster's; their overrides and mirrors apply the same way
(``modelplane.stack.overrides``). There is no mode: the gateway always installs Envoy Gateway, and
Envoy AI Gateway when ``spec.aiGateway`` is Enabled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from modelplane.stack.overrides import NO_REGISTRY, Overrides, Registry
from modelplane_models.inference_gateway import GatewayComponent, GatewayComponent1, Spec


@dataclass(frozen=True)
class Charts:
    """What the gateway's Releases are installed with."""

    gateway: Overrides = field(default_factory=Overrides)
    ai_gateway: Overrides = field(default_factory=Overrides)
    registry: Registry = NO_REGISTRY


def _overrides(entry: GatewayComponent | GatewayComponent1 | None) -> Overrides:
    if entry is None:
        return Overrides()
    return Overrides(entry.version, entry.repository, dict(entry.values or {}))


def charts_of(spec: Spec) -> Charts:
    """Read ``spec.components`` (no overrides when unset) and ``spec.registry`` (no mirror when unset)."""
    components = spec.components
    registry = NO_REGISTRY
    if spec.registry is not None:
        secret = spec.registry.pullSecretRef.name if spec.registry.pullSecretRef is not None else None
        registry = Registry(spec.registry.charts, spec.registry.images, secret)
    return Charts(
        _overrides(components.gateway if components else None),
        _overrides(components.aiGateway if components else None),
        registry,
    )
