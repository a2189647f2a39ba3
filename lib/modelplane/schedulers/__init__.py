"""Workload schedulers of an InferenceCluster: how a replica's pods are wrapped on that cluster.

One module per scheduler and one row in ``SCHEDULERS``: adding Volcano is a
``volcano.py`` with a ``wrap`` function and a ``"Volcano": volcano.wrap`` row.
"""

from __future__ import annotations

from modelplane.schedulers import kai, kueue, none
from modelplane.schedulers.base import Gang, SchedulerSettingsError, WrapFunction, Wrapping

__all__ = [
    "SCHEDULERS",
    "Gang",
    "SchedulerSettingsError",
    "UnknownSchedulerError",
    "WrapFunction",
    "Wrapping",
    "scheduler_for",
]

# By the InferenceCluster's spec.scheduler.type.
SCHEDULERS: dict[str, WrapFunction] = {
    "None": none.wrap,
    "KAI": kai.wrap,
    "Kueue": kueue.wrap,
}


class UnknownSchedulerError(LookupError):
    """A scheduler type no module implements."""


def scheduler_for(kind: str) -> WrapFunction:
    """The wrap function of scheduler ``kind`` (``spec.scheduler.type``; empty means None).

    Raises:
        UnknownSchedulerError: No scheduler of that type is known.
    """
    wrap = SCHEDULERS.get(kind or "None")
    if wrap is None:
        msg = f"spec.scheduler.type: unknown scheduler {kind!r} (known: {', '.join(sorted(SCHEDULERS))})"
        raise UnknownSchedulerError(msg)
    return wrap
