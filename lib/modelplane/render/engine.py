"""Render an XR in-process: check the inputs as the CLI does, reconcile once, shape the output.

The contract is ``crossplane render`` of the Crossplane CLI v2.5 with the
render engine of Crossplane core v2.4 (``--crossplane-binary``), both built
by ``tools/crossplane.sh``. reconciler.py says what the engine does.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
import types
from collections.abc import Coroutine, Generator, Mapping
from typing import Any

from modelplane.render import composed as cdmeta
from modelplane.render.model import RENDER_API_VERSION, RenderError, RenderInputs, RenderOutput
from modelplane.render.output import replace_condition_times, sort_composed
from modelplane.render.pipeline import Runners
from modelplane.render.reconciler import context_struct, reconcile, xr_uid
from modelplane.render.store import Reads, Store, key_of
from modelplane.render.structs import from_struct

__all__ = ["render"]


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _check(inputs: RenderInputs) -> None:
    """What the CLI refuses before it calls the engine."""
    xr, comp = inputs.xr, inputs.composition
    if comp.get("apiVersion") != "apiextensions.crossplane.io/v1" or comp.get("kind") != "Composition":
        msg = f"not a composition: {comp.get('kind', '')}/{_name(comp)}"
        raise RenderError(msg)
    ref = (comp.get("spec") or {}).get("compositeTypeRef") or {}
    if ref.get("kind") != xr.get("kind"):
        msg = (
            f"composition's compositeTypeRef.kind ({ref.get('kind', '')}) does not match "
            f"XR's kind ({xr.get('kind', '')})"
        )
        raise RenderError(msg)
    if ref.get("apiVersion") != xr.get("apiVersion"):
        msg = (
            f"composition's compositeTypeRef.apiVersion ({ref.get('apiVersion', '')}) does not "
            f"match XR's apiVersion ({xr.get('apiVersion', '')})"
        )
        raise RenderError(msg)
    selector = (((xr.get("spec") or {}).get("crossplane") or {}).get("compositionSelector") or {}).get("matchLabels")
    labels = (comp.get("metadata") or {}).get("labels") or {}
    for k, v in sorted((selector or {}).items()):
        if k not in labels:
            msg = f'composition "{_name(comp)}" is missing required label "{k}"'
            raise RenderError(msg)
        if labels[k] != v:
            msg = f'composition "{_name(comp)}" has incorrect value for label "{k}": want "{v}", got "{labels[k]}"'
            raise RenderError(msg)
    if (comp.get("spec") or {}).get("mode") != "Pipeline":
        msg = (
            "render only supports Composition Function pipelines: "
            f'Composition "{_name(comp)}" must use spec.mode: Pipeline'
        )
        raise RenderError(msg)


def _own(parent: dict[str, Any], key: str) -> Any:  # noqa: ANN401 - as setdefault
    """``parent.setdefault(key, {})``, copied when an object (anything else stays, to fail as it would)."""
    child = parent.setdefault(key, {})
    if isinstance(child, Mapping):
        child = parent[key] = dict(child)
    return child


def _engine_xr(inputs: RenderInputs) -> dict[str, Any]:
    """The XR the engine stores: with a UID, a resourceVersion and references to the observed resources.

    A copy of ``inputs.xr`` along the paths it changes only: the store holds it and never changes
    what it holds (what it reads out is a copy), so the rest can be shared.
    """
    xr: dict[str, Any] = dict(inputs.xr)
    meta = _own(xr, "metadata")
    meta["uid"] = xr_uid(xr)
    meta["resourceVersion"] = "999"
    problems = []
    for o in inputs.observed:
        controller = cdmeta.controller_of(o)
        if controller is not None and controller.get("uid", "") != meta["uid"]:
            problems.append(f"observed resource {_name(o)} has a controller ref but is not controlled by the XR")
        if meta.get("namespace") and (o.get("metadata") or {}).get("namespace", "") != meta["namespace"]:
            problems.append(f"observed resource {_name(o)} is not in the same namespace as the XR")
    if problems:
        # errors.Join of several errors prints as a bracketed list.
        joined = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
        msg = f"invalid observed resources: {joined}"
        raise RenderError(msg)
    if inputs.observed:
        refs = []
        for o in inputs.observed:
            ref = {"apiVersion": o.get("apiVersion", ""), "kind": o.get("kind", ""), "name": _name(o)}
            if not meta.get("namespace"):
                ref["namespace"] = (o.get("metadata") or {}).get("namespace", "")
            refs.append({k: v for k, v in ref.items() if v})
        _own(_own(xr, "spec"), "crossplane")["resourceRefs"] = refs
    return xr


def _secret(s: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", **s}


async def _render(inputs: RenderInputs) -> RenderOutput:
    _check(inputs)
    xr = _engine_xr(inputs)
    key = key_of(xr)
    reads = Reads(reader=str(xr.get("kind", "")))
    store = Store(
        [xr, *inputs.observed, *inputs.required],
        catalog=inputs.catalog,
        hidden=key,
        credentials=map(_secret, inputs.credentials),
        reads=reads,
    )
    done = await reconcile(
        key,
        inputs.composition,
        context_struct(inputs.context),
        store,
        Runners(inputs.functions, inputs.requests),
        hints=inputs.requirements,
    )
    # The reconcile's XR and composed resources are its own (read out of the store, or made from what
    # the functions returned), and the store goes with this render: they are the output as they are.
    out_xr = done.xr
    replace_condition_times(out_xr)
    composed = []
    for c in done.composed.composed:
        if key_of(c.resource) == key:
            continue  # The engine takes it for the XR.
        resource = c.resource
        replace_condition_times(resource)
        composed.append(resource)
    context = None
    if done.context is not None:
        context = {"apiVersion": RENDER_API_VERSION, "kind": "Context", "fields": from_struct(done.context)}
    results = [e.as_result() for e in done.events]
    return RenderOutput(
        xr=out_xr,
        composed=sort_composed(composed),
        results=results,
        context=context,
        reads=reads,
        requirements=done.composed.requirements,
    )


_LOOPS = threading.local()


def _loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop for renders: one for all of them, as starting one costs more than a small render.

    Driven with ``run_until_complete``, not ``asyncio.Runner.run``: the runner installs and
    restores a SIGINT handler around every call, and builds the repr of the whole render task
    on the way (a tenth of a preview's CPU). A render handles no signal of its own.
    """
    loop: asyncio.AbstractEventLoop | None = getattr(_LOOPS, "loop", None)
    if loop is None or loop.is_closed():
        loop = _LOOPS.loop = asyncio.new_event_loop()
        atexit.register(loop.close)
    return loop


@types.coroutine
def _resume(coro: Coroutine[Any, Any, RenderOutput], waiting: Any) -> Generator[Any, Any, RenderOutput]:  # noqa: ANN401 - what a coroutine yields to its loop
    """The rest of ``coro``, which yielded ``waiting`` to an event loop: it gets what it waits for, then runs on."""
    while True:
        try:
            got = yield waiting
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as e:  # noqa: BLE001 - thrown into the coroutine, as a loop would
            try:
                waiting = coro.throw(e)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            continue
        try:
            waiting = coro.send(got)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


async def _finish(coro: Coroutine[Any, Any, RenderOutput], waiting: Any) -> RenderOutput:  # noqa: ANN401 - as _resume
    return await _resume(coro, waiting)


def render(inputs: RenderInputs) -> RenderOutput:
    """Render ``inputs`` as ``crossplane render`` with Crossplane's render engine does.

    The render runs straight through while nothing it awaits waits (Modelplane's functions,
    called in-process, never do): driving an event loop costs more than a small render. The
    first time something waits, the rest runs on this thread's event loop, as all of it did,
    from where it stopped. The loop counts as running from the start, so a function that
    asks for it finds it (though not a task of its own until something waited).

    Raises:
        RenderError: The inputs are invalid, a function is unknown or fails, a
            step returns a fatal result or its requirements never stabilise.
    """
    loop = _loop()
    coro = _render(inputs)
    if asyncio.events._get_running_loop() is not None:  # as run_until_complete checks it
        try:
            return loop.run_until_complete(coro)  # refused as ever
        finally:
            coro.close()  # refused, it never started: closed, not left to warn that it was never awaited
    asyncio.events._set_running_loop(loop)  # what run_until_complete sets
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        asyncio.events._set_running_loop(None)
    return loop.run_until_complete(_finish(coro, waiting))
