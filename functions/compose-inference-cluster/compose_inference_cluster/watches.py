"""Observe-only Objects of the workload scheduler's status objects, whose figures become the cluster's capacity.

Which objects, and how they read, is the scheduler's row of
``modelplane.schedulers.SCHEDULERS`` (a KAI Queue; a Kueue ClusterQueue and the
ResourceFlavors it names): this module composes whatever the row asks for, so
a scheduler added to the table is observed with no change here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.names import (
    CONTROL_PLANE_NAMESPACE,
    OBSERVED_FOR_ANNOTATION,
    bounded_name,
    is_scheduler_key,
    scheduler_key,
)
from modelplane.problems import Problem
from modelplane.remote import Readiness, ReadinessRule, observed_manifest, wrap
from modelplane.schedulers import SCHEDULERS, Observation, Watch, WorkloadScheduler
from modelplane_models.inference_cluster import Scheduler

# Observe-only Objects never gate readiness: they only exist to carry the remote object's status back.
_OBSERVE = ReadinessRule(Readiness.SUCCESSFUL_CREATE)


@dataclass(frozen=True)
class Watched:
    """The cluster's workload scheduler: its row of the table, what it observes, and the objects observed."""

    scheduler: WorkloadScheduler
    observation: Observation
    objects: tuple[Mapping[str, Any], ...]


def write_watches(ledger: Ledger, name: str, settings: Scheduler | None) -> Watched:
    """Compose an Observe-only Object per status object the scheduler's row asks for; return what they observed."""
    kind = (settings.type if settings is not None else None) or "None"
    row = SCHEDULERS[kind]

    def seen(watch: Watch) -> tuple[Mapping[str, Any] | None, bool]:
        problems: list[Problem] = []
        key = scheduler_key(watch.name)
        layout = {"status": {"atProvider": {"manifest": watch.layout}}}
        observed = inputs.observed(ledger.req, ledger.rsp, key, layout, problems)
        return (observed_manifest(observed) if observed is not None else None), not problems

    observation = row.observe(settings, seen)
    objects: list[Mapping[str, Any]] = []
    for watch in sorted(observation.watches, key=lambda w: scheduler_key(w.name)):
        obj = wrap(
            watch.manifest,
            name=bounded_name(f"{name}-{watch.object_suffix}", 253),
            namespace=CONTROL_PLANE_NAMESPACE,
            provider_config=name,
            readiness=_OBSERVE,
            observe_only=True,
        )
        if watch.observed_for:
            obj["metadata"].setdefault("annotations", {})[OBSERVED_FOR_ANNOTATION] = watch.observed_for
        ledger.put(scheduler_key(watch.name), obj, ready=True)
        manifest, _ = seen(watch)
        if manifest is not None:
            objects.append(manifest)
    observed = [k for k in ledger.req.observed.resources if is_scheduler_key(k)]
    if observation.partial:
        why = "the scheduler's objects were read in part: those observed before are kept"
        kept = ledger.keep(observed, why)
    elif observation.kept_prefix:
        prefix = scheduler_key(observation.kept_prefix)
        why = f"not named by what was observed of {observation.kept_for} (it may have been read damaged)"
        kept = ledger.keep(
            [k for k in observed if k.startswith(prefix) and _for(ledger, k) == observation.kept_for], why
        )
    else:
        kept = []
    for key in kept:
        # An observer never gates readiness, kept or not.
        ledger.mark(key, ready=True)
    ledger.remove_unwritten(is_scheduler_key, lambda _: f"spec.scheduler ({kind}) does not observe it")
    return Watched(row, observation, tuple(objects))


def _for(ledger: Ledger, key: str) -> str:
    """The object the observed Observe-only Object ``key`` was composed for (``Watch.observed_for``)."""
    meta = ledger.req.observed.resources[key].resource.fields.get("metadata")
    notes = meta.struct_value.fields.get("annotations") if meta is not None and meta.HasField("struct_value") else None
    value = (
        notes.struct_value.fields.get(OBSERVED_FOR_ANNOTATION)
        if notes is not None and notes.HasField("struct_value")
        else None
    )
    return value.string_value if value is not None and value.HasField("string_value") else ""
