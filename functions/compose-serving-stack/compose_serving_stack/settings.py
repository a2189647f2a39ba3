"""``spec.components`` and ``spec.registry`` of a ServingStack, as ``modelplane.stack`` plans with them."""

from __future__ import annotations

from typing import Any

from modelplane.stack.components import Mode, StackComponent
from modelplane.stack.overrides import NO_REGISTRY, Overrides, Registry
from modelplane.stack.plan import Settings
from modelplane_models.serving_stack import Components
from modelplane_models.serving_stack import Registry as RegistrySpec


def settings_of(components: Components | None) -> dict[StackComponent, Settings]:
    """Each component the spec names, with its mode (Managed when unset), overrides and controller."""
    out: dict[StackComponent, Settings] = {}
    if components is None:
        return out
    for component in StackComponent:
        entry: Any = getattr(components, str(component), None)
        if entry is None:
            continue
        mode = getattr(entry, "mode", None)
        controller = getattr(entry, "controller", None)
        out[component] = Settings(
            Mode(mode) if mode else Mode.MANAGED,
            Overrides(entry.version, entry.repository, dict(entry.values or {})),
            (controller.namespace, controller.name) if controller is not None else None,
        )
    return out


def registry_of(registry: RegistrySpec | None) -> Registry:
    """``spec.registry`` (no mirror when unset)."""
    if registry is None:
        return NO_REGISTRY
    secret = registry.pullSecretRef.name if registry.pullSecretRef is not None else None
    return Registry(registry.charts, registry.images, secret)
