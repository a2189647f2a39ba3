"""What a ServingStack does with each of its components: install it, check the cluster's own, or leave it out.

``plan_stack`` reads the stack's settings (backend, scheduler, prometheus, whether the
gateway serves TLS, ``spec.components`` and ``spec.registry``) and returns, per
component, its mode, the releases a Managed one installs (dependencies first, with its
overrides and the registry's mirrors), the probes an Existing one is checked with, and
which replicas need it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.charts import CHARTS, Component
from modelplane.stack.components import (
    Mode,
    NeededBy,
    Probe,
    StackComponent,
    charts_of,
    in_stack,
    needed_by,
    probes,
)
from modelplane.stack.overrides import NO_REGISTRY, Install, Overrides, Registry, install

# spec.prometheus (the cluster's observability.prometheus) as the mode of the prometheus component.
_PROMETHEUS_MODE = {"Managed": Mode.MANAGED, "Installed": Mode.EXISTING}


@dataclass(frozen=True)
class Settings:
    """One component's ``spec.components`` entry: its mode, overrides and, for Existing, its controller."""

    mode: Mode = Mode.MANAGED
    overrides: Overrides = field(default_factory=Overrides)
    controller: tuple[str, str] | None = None


@dataclass(frozen=True)
class Part:
    """One component of a stack as planned.

    Attributes:
        component: The component.
        mode: Managed, Existing or Disabled.
        needed_by: Which replicas cannot run without it.
        installs: Its releases, main chart last (Managed only).
        probes: What says it is there (Existing only).
    """

    component: StackComponent
    mode: Mode
    needed_by: NeededBy
    installs: tuple[Install, ...] = ()
    probes: tuple[Probe, ...] = ()


@dataclass(frozen=True)
class StackPlan:
    """Every component of a stack (sorted by name) and every release to install (dependencies first)."""

    parts: tuple[Part, ...]
    installs: tuple[Install, ...]

    def part(self, component: StackComponent) -> Part | None:
        """The plan of ``component``; None when the stack does not have it."""
        return next((p for p in self.parts if p.component is component), None)

    def mode(self, component: StackComponent) -> Mode | None:
        """The mode of ``component``; None when the stack does not have it."""
        found = self.part(component)
        return found.mode if found is not None else None


def plan_stack(
    *,
    backend: str,
    scheduler: str,
    prometheus: str = "None",
    secure_gateway: bool = True,
    settings: Mapping[StackComponent, Settings] | None = None,
    registry: Registry = NO_REGISTRY,
) -> StackPlan:
    """Plan a stack's components.

    1. Which components the stack has: KServe only with the KServe backend, the scheduler only with one.
    2. Each one's mode: ``settings`` (Managed by default); prometheus's is ``prometheus`` (Managed,
       Installed as Existing, None as Disabled).
    3. A Managed one's releases: each chart with the registry's mirrors and the component's overrides (its
       values to its main chart only). Envoy Gateway calls Envoy AI Gateway as its extension server unless
       Envoy AI Gateway is Disabled.
    4. An Existing one's probes: its API versions and its controller's Deployment.
    5. The releases in install order: each after every release it depends on that is installed here
       (dependencies of other modes are waited for, or not, when composing), ties by component.

    Args:
        backend: The serving backend (``KServe`` or ``Native``).
        scheduler: The scheduler type (a row of ``modelplane.schedulers.SCHEDULERS``).
        prometheus: ``spec.prometheus``: Managed, Installed or None.
        secure_gateway: Whether the gateway serves TLS (cert-manager is then needed by every replica).
        settings: ``spec.components`` by component; absent ones are Managed with no overrides.
        registry: ``spec.registry``.
    """
    chosen = settings or {}
    parts: list[Part] = []
    # 1. and 2. The components and their modes.
    modes: dict[StackComponent, Mode] = {}
    for component in in_stack(backend=backend, scheduler=scheduler):
        if component is StackComponent.PROMETHEUS:
            modes[component] = _PROMETHEUS_MODE.get(prometheus, Mode.DISABLED)
        else:
            modes[component] = chosen.get(component, Settings()).mode
    for component, mode in modes.items():
        setting = chosen.get(component, Settings())
        need = needed_by(component, backend=backend, secure_gateway=secure_gateway)
        if mode is Mode.MANAGED:
            # 3. What a Managed component installs.
            charts = charts_of(component, scheduler=scheduler)
            installs = tuple(
                install(
                    CHARTS[chart],
                    setting.overrides,
                    registry,
                    base_values=_base_values(chart, modes),
                    user_values=chart == charts[-1],
                )
                for chart in charts
            )
            parts.append(Part(component, mode, need, installs=installs))
        elif mode is Mode.EXISTING:
            # 4. What an Existing component is checked with.
            found = probes(component, scheduler=scheduler, controller=setting.controller)
            parts.append(Part(component, mode, need, probes=found))
        else:
            parts.append(Part(component, mode, need))
    # 5. Install order.
    return StackPlan(tuple(parts), _ordered([i for p in parts for i in p.installs]))


def _base_values(chart: Component, modes: Mapping[StackComponent, Mode]) -> Mapping[str, Any] | None:
    """Modelplane's values for ``chart`` on this stack when they differ from its row's; None otherwise."""
    if chart is Component.ENVOY_GATEWAY and modes.get(StackComponent.AI_GATEWAY) is Mode.DISABLED:
        # No extension server to call: Envoy Gateway would only log every failed call.
        return {}
    return None


def _ordered(installs: list[Install]) -> tuple[Install, ...]:
    by_chart = {i.chart.component: i for i in installs}
    ordered: list[Install] = []
    placed: set[Component] = set()
    while len(ordered) < len(by_chart):
        ready = sorted(
            c
            for c, i in by_chart.items()
            if c not in placed and {d for d in i.chart.depends_on if d in by_chart} <= placed
        )
        if not ready:  # pragma: no cover - the table has no cycle (tests/unit/stack holds it to that)
            ready = sorted(set(by_chart) - placed)
        placed.update(ready)
        ordered.extend(by_chart[c] for c in ready)
    return tuple(ordered)
