"""Compose an XR with a function pipeline, as Crossplane's ``FunctionComposer.Compose`` does.

1. Observe the composed resources the XR's ``spec.crossplane.resourceRefs``
   name (those another controller owns are ignored).
2. Run the pipeline over the observed state.
3. Turn each desired resource into an object to apply: an observed one keeps
   its name and namespace; every one gets the XR's metadata and a name.
4. Delete the observed resources no longer desired, record references to the
   desired ones on the XR, apply them.
5. Patch the XR's status with the desired composite's: what the store then
   holds for the XR is the references and that status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2

from modelplane.protojson import copy_json
from modelplane.render import composed as cdmeta
from modelplane.render import wire
from modelplane.render.conditions import get_conditions, set_conditions
from modelplane.render.events import REASON_NAMESPACE_OVERRIDDEN, Event, warning
from modelplane.render.model import ANNOTATION_RESOURCE_NAME, RenderError
from modelplane.render.pipeline import Runners, run_pipeline
from modelplane.render.store import Store, key_of
from modelplane.render.structs import from_struct, to_wire

__all__ = ["ComposedResource", "CompositionResult", "compose", "status_patch"]


@dataclass(frozen=True)
class ComposedResource:
    """One desired composed resource as applied, and whether the pipeline said it is ready."""

    name: str
    resource: dict[str, Any]
    ready: bool


@dataclass
class CompositionResult:
    """What composing returned to the reconciler."""

    composed: list[ComposedResource] = field(default_factory=list)
    ready: bool | None = None
    events: list[Event] = field(default_factory=list)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    context: struct_pb2.Struct | None = None
    requirements: dict[str, fnv1.Requirements] = field(default_factory=dict)  # by step, as the pipeline left them


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _observe(xr: Mapping[str, Any], store: Store) -> dict[str, Mapping[str, Any]]:
    """``ExistingComposedResourceObserver``: the XR's referenced resources, by composition resource name.

    The store's own objects, read and never changed.
    """
    xmeta = _meta(xr)
    out: dict[str, Mapping[str, Any]] = {}
    refs = ((xr.get("spec") or {}).get("crossplane") or {}).get("resourceRefs") or ()
    for ref in refs:
        if not ref.get("name"):
            continue
        namespace = xmeta.get("namespace") or ref.get("namespace") or ""
        probe = {"apiVersion": ref.get("apiVersion", ""), "kind": ref.get("kind", "")}
        found = store.peek(key_of({**probe, "metadata": {"namespace": namespace, "name": ref["name"]}}))
        if found is None:
            continue
        controller = cdmeta.controller_of(found)
        if controller is not None and controller.get("uid", "") != xmeta.get("uid", ""):
            continue
        name = str((_meta(found).get("annotations") or {}).get(ANNOTATION_RESOURCE_NAME, ""))
        if not name:
            msg = (
                "cannot get existing composed resources: encountered composed resource without required "
                f'"{ANNOTATION_RESOURCE_NAME}" annotation'
            )
            raise RenderError(msg)
        out[name] = found
    return out


def _observed_state(xr: Mapping[str, Any], observed: Mapping[str, Mapping[str, Any]]) -> bytes:
    """The observed state's wire bytes: each step's request parses them, never a copy of a parsed one.

    A function reads its XR whole, but seldom an observed resource (it reads a field or two of one).
    """
    return wire.state(to_wire(xr), ((name, to_wire(o, seldom_read=True)) for name, o in observed.items()))


def _desired(
    xr: Mapping[str, Any], desired: fnv1.State, observed: Mapping[str, Mapping[str, Any]], events: list[Event]
) -> list[ComposedResource]:
    namespace = str(_meta(xr).get("namespace") or "")
    out: list[ComposedResource] = []
    # Crossplane walks a map here; sorted, the events it emits come in a stable order.
    for name in sorted(desired.resources):
        dr = desired.resources[name]
        cd = from_struct(dr.resource)
        meta = cd.get("metadata")
        if not isinstance(meta, dict):
            meta = cd["metadata"] = {}
        if name in observed:
            # Keep the name (and namespace) of the resource this desired state pertains to.
            ometa = _meta(observed[name])
            for key in ("namespace", "name", "generateName"):
                if ometa.get(key):
                    meta[key] = ometa[key]
                else:
                    meta.pop(key, None)
        if namespace and meta.get("namespace") and meta["namespace"] != namespace:
            msg = (
                f'cannot create composed resource "{name}" in namespace "{meta["namespace"]}", '
                f'using XR namespace "{namespace}" instead'
            )
            events.append(warning(REASON_NAMESPACE_OVERRIDDEN, msg))
        cdmeta.render_metadata(cd, xr, name)
        cdmeta.generate_name(cd)
        cdmeta.validate_name(cd, name)
        out.append(ComposedResource(name, cd, dr.ready == fnv1.READY_TRUE))
    return out


def _collect_garbage(
    xr: Mapping[str, Any], observed: Mapping[str, Mapping[str, Any]], desired: Sequence[ComposedResource], store: Store
) -> None:
    """Delete what was composed and is no longer desired (only what the XR controls)."""
    wanted = {d.name for d in desired}
    for name, o in sorted(observed.items()):
        if name in wanted:
            continue
        controller = cdmeta.controller_of(o)
        if controller is None:
            continue
        if controller.get("uid", "") != _meta(xr).get("uid", ""):
            msg = (
                "cannot garbage collect composed resources that are no longer desired: refusing to delete "
                f'composed resource "{name}" that is controlled by {controller.get("kind", "")} '
                f'"{controller.get("name", "")}"'
            )
            raise RenderError(msg)
        store.delete(key_of(o))


def _resource_refs(xr: Mapping[str, Any], desired: Sequence[ComposedResource]) -> dict[str, Any]:
    """The object applied to record the XR's references to its composed resources (sorted, as Crossplane keeps them)."""
    namespaced = bool(_meta(xr).get("namespace"))
    refs = []
    for d in desired:
        meta = _meta(d.resource)
        ref = {
            "apiVersion": d.resource.get("apiVersion", ""),
            "kind": d.resource.get("kind", ""),
            "namespace": "" if namespaced else meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
        }
        refs.append({k: v for k, v in ref.items() if v})
    refs.sort(key=lambda r: r.get("apiVersion", "") + r.get("kind", "") + r.get("name", "") + r.get("namespace", ""))
    xmeta = {k: _meta(xr)[k] for k in ("name", "namespace") if _meta(xr).get(k)}
    return {
        "apiVersion": xr.get("apiVersion", ""),
        "kind": xr.get("kind", ""),
        "metadata": xmeta,
        "spec": {"crossplane": {"resourceRefs": [r for r in refs if r]}},
    }


def status_patch(store: Store, obj: dict[str, Any]) -> dict[str, Any]:
    """A status update or patch in the render engine's client: the stored object with ``obj``'s status.

    ``obj`` is handed over (its caller changes it no more). Returns the object as stored, but
    for a top level and a ``status`` of its own: its caller may set their keys, and nothing else.
    """
    stored = store.peek(key_of(obj))
    if stored is None:
        merged = copy_json(obj)
    else:
        merged = dict(stored)  # the store never changes what it holds: the rest is shared
        for key in ("status", "conditions"):
            if key in obj:
                merged[key] = obj[key]
    store.put(merged, copy=False)
    return _own_status(merged)


def _own_status(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with a top level and a ``status`` (when an object) of its own, the rest shared."""
    out = dict(obj)
    status = out.get("status")
    if isinstance(status, dict):
        out["status"] = dict(status)
    return out


def _patch_xr_status(xr: Mapping[str, Any], desired: fnv1.State, store: Store) -> dict[str, Any]:
    patch = from_struct(desired.composite.resource) if desired.HasField("composite") else {}
    meta = patch.get("metadata")
    if not isinstance(meta, dict):
        meta = patch["metadata"] = {}
    patch["apiVersion"], patch["kind"] = xr.get("apiVersion", ""), xr.get("kind", "")
    for key in ("namespace", "name", "uid"):
        if _meta(xr).get(key):
            meta[key] = _meta(xr)[key]
        else:
            meta.pop(key, None)
    # Conditions set so far are kept (none would write a null list).
    if conditions := get_conditions(xr):
        set_conditions(patch, conditions)
    return status_patch(store, patch)


async def compose(
    xr: dict[str, Any],
    pipeline: Sequence[Mapping[str, Any]],
    context: struct_pb2.Struct,
    store: Store,
    runners: Runners,
    hints: Mapping[str, fnv1.Requirements] | None = None,
) -> tuple[dict[str, Any], CompositionResult]:
    """Compose ``xr``: return the XR as the store then holds it, and what composing found.

    ``hints`` are as ``run_pipeline`` takes them.

    Raises:
        PipelineFatalError: A step returned a fatal result.
        RenderError: Composing failed otherwise.
    """
    observed = _observe(xr, store)
    result = await run_pipeline(pipeline, _observed_state(xr, observed), context, store, runners, hints)
    out = CompositionResult(
        events=result.events, conditions=result.conditions, context=result.context, requirements=result.requirements
    )
    out.composed = _desired(xr, result.desired, observed, out.events)
    _collect_garbage(xr, observed, out.composed, store)
    store.put(_resource_refs(xr, out.composed), copy=False)
    for d in out.composed:
        store.put(d.resource, copy=False)  # made here, and changed no more
    ready = result.desired.composite.ready
    out.ready = {fnv1.READY_TRUE: True, fnv1.READY_FALSE: False}.get(ready)
    return _patch_xr_status(xr, result.desired, store), out
