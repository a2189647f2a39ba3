r"""Render an XR the way ``crossplane render`` v2.5 does: one run of Crossplane's XR reconciler.

The CLI hands the XR, the Composition and the other inputs to a Crossplane
core binary (``crossplane internal render``), which reconciles the XR once
against an in-memory store (see store.py). This module follows that loop:

1. Give the XR a UID if it has none (a SHA-1 UUID of
   "<group>/<version>, Kind=<kind>\x00<namespace>\x00<name>"), reference the
   observed composed resources from ``spec.crossplane.resourceRefs`` and
   load the store; the reconciler reads the XR back from it.
2. Mark the XR ``Responsive``, select the Composition (an event when it
   changes) and label the XR with the ``crossplane.io/composite`` prefix.
3. Compose (composer.py), then turn what the functions said into events and
   conditions: one event per result, one per composed resource not yet
   ready; ``Synced``, and ``Ready`` from the composite's or the composed
   resources' readiness.
4. Write the status back; what the store holds for the XR is the output.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format, struct_pb2

from modelplane.protojson import copy_json
from modelplane.render.composer import CompositionResult, compose, status_patch
from modelplane.render.conditions import SYSTEM_TYPES, condition, set_conditions, stable_n_and_some_more
from modelplane.render.events import REASON_COMPOSE, REASON_SELECT_COMPOSITION, Event, normal
from modelplane.render.model import LABEL_COMPOSITE, RenderError
from modelplane.render.pipeline import PipelineFatalError, Runners
from modelplane.render.store import Key, Store

__all__ = ["Reconciled", "reconcile", "xr_uid"]


@dataclass(frozen=True)
class Reconciled:
    """What one reconcile left: the XR as stored, what was composed, the events and the last context."""

    xr: dict[str, Any]
    composed: CompositionResult
    events: list[Event]
    context: struct_pb2.Struct | None


def xr_uid(xr: Mapping[str, Any]) -> str:
    """The XR's UID, or the stable one the render engine gives an XR without."""
    meta = xr.get("metadata") or {}
    if meta.get("uid"):
        return str(meta["uid"])
    group, _, version = str(xr.get("apiVersion", "")).rpartition("/")
    gvk = f"{group}/{version}, Kind={xr.get('kind', '')}"
    return str(uuid.uuid5(uuid.UUID(int=0), f"{gvk}\x00{meta.get('namespace', '')}\x00{meta.get('name', '')}"))


def _writable(xr: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``xr`` along the paths a reconcile writes before composing, sharing the rest.

    Its top level, metadata and labels, spec and ``spec.crossplane``, status (each copied when
    an object): the store's XR stays as it was, so its status is the one before.
    """
    out = dict(xr)
    for key, inner in (("metadata", "labels"), ("spec", "crossplane")):
        parent = out.get(key)
        if isinstance(parent, dict):
            parent = out[key] = dict(parent)
            if isinstance(parent.get(inner), dict):
                parent[inner] = dict(parent[inner])
    if isinstance(out.get("status"), dict):
        out["status"] = dict(out["status"])
    return out


def _stamped(xr: Mapping[str, Any], conditions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``conditions`` stamped with the XR's generation, as the conditions manager's MarkConditions sets them."""
    generation = (xr.get("metadata") or {}).get("generation")
    return [{**c, "observedGeneration": generation} if generation else c for c in conditions]


def _mark(xr: dict[str, Any], conditions: Sequence[dict[str, Any]]) -> None:
    """The conditions manager's MarkConditions: stamp the XR's generation, then set."""
    set_conditions(xr, _stamped(xr, conditions))


def _select_composition(xr: dict[str, Any], name: str) -> list[Event]:
    crossplane = xr.setdefault("spec", {}).setdefault("crossplane", {})
    before = crossplane.get("compositionRef")
    crossplane["compositionRef"] = {"name": name} if name else {}
    if before == crossplane["compositionRef"]:
        return []
    return [normal(REASON_SELECT_COMPOSITION, f"Successfully selected composition: {name}")]


def _ready(result: CompositionResult, unready: Sequence[str]) -> dict[str, Any]:
    if result.ready is not None:
        return condition("Ready", "True", "Available") if result.ready else condition("Ready", "False", "Creating")
    if unready:
        return condition("Ready", "False", "Creating", f"Unready resources: {stable_n_and_some_more(unready)}")
    return condition("Ready", "True", "Available")


async def reconcile(
    key: Key,
    composition: Mapping[str, Any],
    context: struct_pb2.Struct,
    store: Store,
    runners: Runners,
    *,
    hints: Mapping[str, fnv1.Requirements] | None = None,
) -> Reconciled:
    """Reconcile the XR at ``key`` once (``hints`` as ``run_pipeline`` takes them).

    Raises:
        RenderError: Composing failed (the message is the reconciler's).
    """
    stored = store.peek(key)
    if stored is None:
        msg = "reconcile failed: cannot get composite resource"
        raise RenderError(msg)
    xr = _writable(stored)
    status_before = stored.get("status")  # the store's, which never changes
    _mark(xr, [condition("Responsive", "True", "WatchCircuitClosed")])
    events = _select_composition(xr, str((composition.get("metadata") or {}).get("name", "")))
    updated: dict[str, Any] | None = None
    labels = xr.setdefault("metadata", {}).setdefault("labels", {})
    if not labels.get(LABEL_COMPOSITE):
        labels[LABEL_COMPOSITE] = xr["metadata"].get("name", "")
        store.put(xr, copy=False)  # composing only reads it
        updated = xr
    pipeline = (composition.get("spec") or {}).get("pipeline") or ()
    try:
        xr, result = await compose(xr, pipeline, context, store, runners, hints)
    except PipelineFatalError as e:
        msg = f"cannot compose resources: {e}"
        raise RenderError(msg) from e
    except RenderError as e:
        msg = f"reconcile failed: cannot compose resources: {e}"
        raise RenderError(msg) from e
    events.extend(result.events)
    custom = [
        condition(c["type"], c["status"], c["reason"], c["message"])
        for c in result.conditions
        if c["type"] not in SYSTEM_TYPES
    ]
    unready = [c.name for c in result.composed if not c.ready]
    events.extend(normal(REASON_COMPOSE, f'Composed resource "{n}" is not yet ready') for n in unready)
    # The functions' conditions set one by one, then marked: set at once, as setting each in turn would.
    marked = _stamped(xr, [condition("Synced", "True", "ReconcileSuccess"), _ready(result, unready)])
    set_conditions(xr, [*custom, *marked])
    if xr.get("status") != status_before:
        updated = status_patch(store, xr)
    elif updated is not None:
        updated = copy_json(updated)  # it shares what it did not change with the input XR
    # The XR as stored, which the store, going with this render, no longer needs.
    final = updated if updated is not None else store.peek(key)
    return Reconciled(xr=dict(final) if final else xr, composed=result, events=events, context=result.context)


def context_struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    """The context the first step gets: empty, with the values ``--context-values`` seeds into it."""
    out = struct_pb2.Struct()
    for k, v in values.items():
        out.fields[k].CopyFrom(json_format.ParseDict(v, struct_pb2.Value()))
    return out
