"""FleetQuotas of a fleet: per team (a quota) and limit, what is in use, per class and per priority."""

from __future__ import annotations

from typing import Any

from modelplane.conditions import Type
from modelplane.preview.fleet import Fleet
from modelplane.preview.view.model import QuotaView
from modelplane.preview.view.read import condition, display_name, of_kind


def quota_views(fleet: Fleet) -> tuple[QuotaView, ...]:
    """One row per limit of each FleetQuota, as its status counts it (a quota without limits: one row)."""
    rows = []
    for key, state in of_kind(fleet, "FleetQuota"):
        status: dict[str, Any] = state.xr.get("status") or {}
        namespaces = tuple(str(n) for n in status.get("namespaces") or [])
        beyond = tuple(str(n) for n in [*(status.get("exceeded") or []), *(status.get("preempted") or [])])
        within = condition(state.xr, Type.WITHIN_LIMITS)
        limits = [entry for entry in status.get("limits") or [] if isinstance(entry, dict)]
        if not limits:
            rows.append(QuotaView(display_name(key), namespaces, "-", None, 0, (), (), beyond, within))
        for entry in limits:
            classes = tuple(f"{c.get('className', '')} {c.get('inUse', 0)}" for c in entry.get("classes") or [])
            priorities = tuple(_priority(p) for p in entry.get("priorities") or [])
            rows.append(
                QuotaView(
                    quota=display_name(key),
                    namespaces=namespaces,
                    limit=str(entry.get("name", "")),
                    allows=int(entry.get("accelerators", 0)),
                    in_use=int(entry.get("inUse", 0)),
                    classes=classes,
                    priorities=priorities,
                    beyond=beyond,
                    within=within,
                )
            )
    return tuple(rows)


def _priority(entry: dict[str, Any]) -> str:
    """``production 16`` or ``batch 8 (8 not serving)``; replicas without a priority as ``(none)``."""
    name = str(entry.get("name") or "(none)")
    pending = int(entry.get("notServing", 0))
    return f"{name} {entry.get('inUse', 0)}" + (f" ({pending} not serving)" if pending else "")
