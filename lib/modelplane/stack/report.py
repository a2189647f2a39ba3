"""What a ServingStack says of its components: ``status.components`` and the ComponentsReady condition.

One entry per component: its mode, whether it is there, the chart version of a Managed
one, what is missing when it is not, and which replicas need it. An InferenceCluster
copies the list, and the fleet scheduler reads it back from there
(``modelplane.capacity.clusters.ClusterInfo.lacking``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.charts import Component
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.stack.components import Mode, NeededBy, StackComponent
from modelplane.stack.plan import Part, StackPlan
from modelplane.stack.presence import Presence

DISABLED_MESSAGE = "Disabled: nothing is installed or checked"


@dataclass(frozen=True)
class ComponentState:
    """One component as the stack reports it (``status.components[]``)."""

    component: StackComponent
    mode: Mode
    ready: bool
    needed_by: NeededBy
    version: str = ""
    message: str = ""

    def status(self) -> dict[str, Any]:
        """The ``status.components[]`` entry."""
        out: dict[str, Any] = {
            "name": str(self.component),
            "mode": str(self.mode),
            "ready": self.ready,
            "neededBy": str(self.needed_by),
        }
        if self.version:
            out["version"] = self.version
        if self.message:
            out["message"] = self.message
        return out


def _managed(part: Part, ready: Mapping[Component, bool], waiting: Mapping[Component, str]) -> ComponentState:
    charts = [i.chart.component for i in part.installs]
    pending = [str(c) for c in charts if not ready.get(c, False)]
    waits = [waiting[c] for c in charts if c in waiting]
    message = "; ".join(waits) if waits else (f"not ready yet: {', '.join(pending)}" if pending else "")
    version = part.installs[-1].version if part.installs else ""
    return ComponentState(part.component, part.mode, not pending, part.needed_by, version, message)


def component_states(
    plan: StackPlan,
    ready: Mapping[Component, bool],
    found: Mapping[StackComponent, Presence],
    waiting: Mapping[Component, str] | None = None,
) -> tuple[ComponentState, ...]:
    """Each component's state, sorted by name.

    Args:
        plan: The stack's plan.
        ready: Whether each Managed release is Ready.
        found: Each Existing component's presence.
        waiting: Why a Managed release is not composed yet (its dependencies), by chart.
    """
    out = []
    for part in plan.parts:
        if part.mode is Mode.MANAGED:
            out.append(_managed(part, ready, waiting or {}))
        elif part.mode is Mode.EXISTING:
            seen = found.get(part.component, Presence(()))
            out.append(ComponentState(part.component, part.mode, seen.ready, part.needed_by, "", seen.problems()))
        else:
            out.append(
                ComponentState(
                    part.component, part.mode, ready=False, needed_by=part.needed_by, message=DISABLED_MESSAGE
                )
            )
    return tuple(sorted(out, key=lambda s: s.component))


def components_condition(states: tuple[ComponentState, ...], found: Mapping[StackComponent, Presence]) -> Condition:
    """ComponentsReady: whether every Existing component is there, naming what is missing and what is Disabled."""
    existing = [s for s in states if s.mode is Mode.EXISTING]
    # A Disabled component no replica needs (prometheus without observability) is not worth a word.
    disabled = [str(s.component) for s in states if s.mode is Mode.DISABLED and s.needed_by is not NeededBy.NONE]
    missing = [s for s in existing if not s.ready]
    unchecked = all(not found.get(s.component, Presence(())).checked for s in missing)
    if missing:
        parts = "; ".join(f"{s.component} (Existing): {s.message}" for s in missing)
        reason = Reason.CHECKING_COMPONENTS if unchecked else Reason.COMPONENT_MISSING
        return Condition(Type.COMPONENTS_READY, Status.FALSE, reason, parts)
    said = (
        f"found on the cluster: {', '.join(str(s.component) for s in existing)}"
        if existing
        else "no component is Existing"
    )
    if disabled:
        said += f"; Disabled: {', '.join(disabled)} (replicas that need them are not placed on this cluster)"
    return Condition(Type.COMPONENTS_READY, Status.TRUE, Reason.COMPONENTS_READY, said)
