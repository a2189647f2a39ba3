"""Status conditions as Crossplane's typed ``ConditionedStatus`` reads, merges and writes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.render.model import CONDITION_TIME

__all__ = [
    "SYSTEM_TYPES",
    "condition",
    "get_conditions",
    "set_conditions",
    "stable_n_and_some_more",
]

# Condition types only Crossplane sets: a function's conditions of these types are ignored.
SYSTEM_TYPES = frozenset({"Ready", "Synced", "Healthy", "UpToDate", "Responsive"})

_FIELDS = ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message")
_OMIT_EMPTY = frozenset({"observedGeneration", "message"})
_FIRST_N = 3


def condition(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    """A condition stamped with the fixed render time."""
    out = {"type": type_, "status": status, "lastTransitionTime": CONDITION_TIME, "reason": reason}
    if message:
        out["message"] = message
    return out


def _typed(c: Mapping[str, Any]) -> dict[str, Any]:
    """A condition read into the Go struct and written back: other keys drop, empty optional ones too."""
    out: dict[str, Any] = {}
    for k in _FIELDS:
        v = c.get(k)
        if k in _OMIT_EMPTY and not v:
            continue
        out[k] = v if v is not None else ("" if k != "lastTransitionTime" else None)
    return out


def get_conditions(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The object's conditions, as Crossplane reads them."""
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return []
    return [_typed(c) for c in status.get("conditions") or () if isinstance(c, Mapping)]


def _equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    keys = ["type", "status", "reason", "message"]
    if a.get("observedGeneration") and b.get("observedGeneration"):
        keys.append("observedGeneration")
    return all(a.get(k, "") == b.get(k, "") for k in keys)


def set_conditions(obj: dict[str, Any], new: Sequence[Mapping[str, Any]]) -> None:
    """``ConditionedStatus.SetConditions``: replace a changed condition in place, append a new type."""
    conditions = get_conditions(obj)
    for cond in new:
        found = False
        for i, existing in enumerate(conditions):
            if existing.get("type") != cond["type"]:
                continue
            found = True
            if not _equal(existing, cond):
                conditions[i] = _typed(cond)
        if not found:
            conditions.append(_typed(cond))
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    status["conditions"] = conditions


def stable_n_and_some_more(names: Sequence[str]) -> str:
    """``resource.StableNAndSomeMore(3, names)``: the first three sorted, then how many more."""
    s = sorted(names)
    if len(s) > _FIRST_N:
        return f"{', '.join(s[:_FIRST_N])}, and {len(s) - _FIRST_N} more"
    if len(s) == _FIRST_N:
        return f"{', '.join(s[:-1])}, and {s[-1]}"
    return ", ".join(s)
