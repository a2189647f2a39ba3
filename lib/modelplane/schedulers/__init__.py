"""Workload schedulers of an InferenceCluster: one module each, one row each in ``SCHEDULERS``.

A row says everything Modelplane does with a scheduler: how a replica's pods are
wrapped for it (compose-model-replica), which of its status objects a cluster
observes and how they read as capacity (compose-inference-cluster), the
ServingStack charts it installs, and what says it is there when a cluster runs it
already (``servingStack.components.scheduler.mode: Existing``). Adding Volcano is a ``volcano.py`` with those
functions and a ``"Volcano": WorkloadScheduler(volcano.wrap, ...)`` row (and the
value in the InferenceCluster XRD's ``spec.scheduler.type`` enum).
"""

from __future__ import annotations

from modelplane.schedulers import kai, kueue, none
from modelplane.schedulers.base import (
    Gang,
    Observation,
    SchedulerSettingsError,
    Seen,
    Watch,
    WorkloadScheduler,
    WrapFunction,
    Wrapping,
)

__all__ = [
    "SCHEDULERS",
    "Gang",
    "Observation",
    "SchedulerSettingsError",
    "Seen",
    "UnknownSchedulerError",
    "Watch",
    "WorkloadScheduler",
    "WrapFunction",
    "Wrapping",
    "scheduler_for",
]

# By the InferenceCluster's spec.scheduler.type.
SCHEDULERS: dict[str, WorkloadScheduler] = {
    "None": WorkloadScheduler(none.wrap),
    "KAI": WorkloadScheduler(
        kai.wrap,
        kai.observe,
        kai.snapshot,
        charts=("kai-scheduler",),
        apis=(kai.QUEUE_API_VERSION, kai.POD_GROUP_API_VERSION),
    ),
    "Kueue": WorkloadScheduler(
        kueue.wrap,
        kueue.observe,
        kueue.snapshot,
        charts=("kueue",),
        apis=(kueue.API_VERSION,),
        controller=("kueue-system", "kueue-controller-manager"),
    ),
}


class UnknownSchedulerError(LookupError):
    """A scheduler type no module implements."""


def scheduler_for(kind: str) -> WorkloadScheduler:
    """The row of scheduler ``kind`` (``spec.scheduler.type``; empty means None).

    Raises:
        UnknownSchedulerError: No scheduler of that type is known.
    """
    row = SCHEDULERS.get(kind or "None")
    if row is None:
        msg = f"spec.scheduler.type: unknown scheduler {kind!r} (known: {', '.join(sorted(SCHEDULERS))})"
        raise UnknownSchedulerError(msg)
    return row
