"""Run a Composition's function pipeline, as Crossplane's ``FunctionComposer`` does.

1. Each step gets the observed state, the desired state and context the
   previous step returned, its input, its credentials and its bootstrap
   required resources.
2. A step is called again while the requirements it returns change (at most
   ``MAX_REQUIREMENTS_ITERATIONS`` more calls), each time with what its
   selectors match in the store; only the last call's response counts.
3. Its conditions are collected; its results become events (a fatal one stops
   the pipeline, keeping what was collected before it).
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format, struct_pb2

from modelplane.render.events import REASON_COMPOSE, Event, normal, warning
from modelplane.render.model import RenderError, Runner
from modelplane.render.requests import KeptRequests, require, with_required
from modelplane.render.store import Store

__all__ = ["MAX_REQUIREMENTS_ITERATIONS", "PipelineFatalError", "PipelineResult", "Runners", "run_pipeline"]

# A function is called at most this many times more than once while its
# requirements keep changing (xfn.MaxRequirementsIterations).
MAX_REQUIREMENTS_ITERATIONS = 5

_STATUS = {
    fnv1.STATUS_CONDITION_TRUE: "True",
    fnv1.STATUS_CONDITION_FALSE: "False",
    fnv1.STATUS_CONDITION_UNKNOWN: "Unknown",
    fnv1.STATUS_CONDITION_UNSPECIFIED: "Unknown",
}
_CAPABILITIES = (
    fnv1.CAPABILITY_CAPABILITIES,
    fnv1.CAPABILITY_REQUIRED_RESOURCES,
    fnv1.CAPABILITY_CREDENTIALS,
    fnv1.CAPABILITY_CONDITIONS,
    fnv1.CAPABILITY_REQUIRED_SCHEMAS,
)


@dataclass
class PipelineResult:
    """What the pipeline returned: the last desired state, and what every step said."""

    desired: fnv1.State = field(default_factory=fnv1.State)
    context: struct_pb2.Struct | None = None
    events: list[Event] = field(default_factory=list)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    # What each step's last call required, by step name: the hint for its next run (see ``run_pipeline``).
    requirements: dict[str, fnv1.Requirements] = field(default_factory=dict)


class PipelineFatalError(RenderError):
    """A step returned a fatal result: the render fails (the CLI prints nothing but the error)."""

    def __init__(self, step: str, message: str) -> None:
        """The error of ``step``'s fatal result ``message``."""
        super().__init__(f'pipeline step "{step}" returned a fatal result: {message}')


def _loader() -> Callable[[str], Runner]:
    from modelplane.render.runners import load_runner  # noqa: PLC0415 - import only when needed

    return load_runner


class Runners:
    """The runner of each functionRef: the ones given, else Modelplane's own, loaded once."""

    def __init__(self, given: Mapping[str, Runner] | None, requests: KeptRequests | None = None) -> None:
        """Use ``given`` runners only, or when None load Modelplane's; keep their requests in ``requests``, if any."""
        self._given = given
        self._loaded: dict[str, Runner] = {}
        self.requests = requests

    def get(self, ref: str) -> Runner:
        """The runner for ``ref``."""
        if self._given is not None:
            if ref not in self._given:
                known = ", ".join(sorted(self._given)) or "none"
                msg = f'unknown function "{ref}" - it is not among the functions supplied ({known})'
                raise RenderError(msg)
            return self._given[ref]
        if ref not in self._loaded:
            try:
                self._loaded[ref] = _loader()(ref)
            except LookupError as e:
                raise RenderError(str(e)) from e
        return self._loaded[ref]


def _selector(sel: Mapping[str, Any]) -> fnv1.ResourceSelector:
    rs = fnv1.ResourceSelector(api_version=sel.get("apiVersion", ""), kind=sel.get("kind", ""))
    if sel.get("namespace"):
        rs.namespace = sel["namespace"]
    if sel.get("name") is not None:
        rs.match_name = sel["name"]
    elif sel.get("matchLabels") is not None:
        rs.match_labels.labels.update(sel["matchLabels"])
    return rs


def _credentials(step: Mapping[str, Any], store: Store, req: fnv1.RunFunctionRequest) -> None:
    for cs in step.get("credentials") or ():
        ref = cs.get("secretRef")
        if cs.get("source") != "Secret" or ref is None:
            continue
        name, namespace = str(ref.get("name", "")), str(ref.get("namespace", ""))
        secret = store.get(("", "v1", "Secret", namespace, name))
        if secret is None:
            msg = (
                f'cannot get Composition pipeline step "{step.get("step", "")}" credential '
                f'"{cs.get("name", "")}" from Secret: Secret "{name}" not found'
            )
            raise RenderError(msg)
        data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
        req.credentials[cs["name"]].credential_data.data.update(data)


def _step_request(
    step: Mapping[str, Any],
    store: Store,
    observed: bytes,
    desired: fnv1.State,
    ctx: struct_pb2.Struct | None,
    into: fnv1.RunFunctionRequest | None = None,
) -> fnv1.RunFunctionRequest:
    """The step's request (``observed`` a State's wire bytes), written ``into`` one holding no more than answers."""
    req = fnv1.RunFunctionRequest() if into is None else into
    req.observed.MergeFromString(observed)
    req.observed.SetInParent()
    req.desired.CopyFrom(desired)
    if ctx is not None:
        req.context.CopyFrom(ctx)
    if step.get("input") is not None:
        try:
            req.input.CopyFrom(json_format.ParseDict(step["input"], struct_pb2.Struct()))
        except json_format.ParseError as e:
            msg = f'cannot unmarshal input for Composition pipeline step "{step.get("step", "")}": {e}'
            raise RenderError(msg) from e
    _credentials(step, store, req)
    for sel in (step.get("requirements") or {}).get("requiredResources") or ():
        req.required_resources[sel["requirementName"]].CopyFrom(store.fetch(_selector(sel)))
    # The request tag (a hash of the request) is left out: no function of ours reads it.
    req.meta.capabilities.extend(_CAPABILITIES)
    return req


async def _call(runner: Runner, ref: str, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    try:
        # The generated servicer is untyped; name the call's type once here.
        run: Callable[[fnv1.RunFunctionRequest, None], Awaitable[object]] = runner.RunFunction
        rsp = await run(req, None)
    except Exception as e:
        msg = f"function {ref} raised {type(e).__name__}: {e}"
        raise RenderError(msg) from e
    if not isinstance(rsp, fnv1.RunFunctionResponse):
        msg = f"function {ref} returned {type(rsp).__name__}, not a RunFunctionResponse"
        raise RenderError(msg)
    return rsp


def _next_request(
    base: fnv1.RunFunctionRequest,
    store: Store,
    current: fnv1.Requirements,
    rsp: fnv1.RunFunctionResponse,
) -> fnv1.RunFunctionRequest:
    """The request of the next call: ``base`` with what ``current`` requires, fetched straight into it."""
    nxt = with_required(base, store, current)
    if rsp.HasField("context"):
        nxt.context.CopyFrom(rsp.context)
    else:
        nxt.ClearField("context")
    return nxt


def _sees_the_same(call: fnv1.RunFunctionRequest, nxt: fnv1.RunFunctionRequest) -> bool:
    """Whether ``nxt`` holds the very resources and schemas ``call`` held."""
    return (
        dict(call.required_resources.items()) == dict(nxt.required_resources.items())
        and dict(call.extra_resources.items()) == dict(nxt.extra_resources.items())
        and set(call.required_schemas) == set(nxt.required_schemas)
    )


def _settled_on(hint: fnv1.Requirements, call: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> bool:
    """Whether ``rsp``, to a call given what ``hint`` requires, is where the usual calls would settle.

    So it is when it requires exactly that again and leaves the context as it got it: the calls
    from the step's own request would end with one given the same resources and context.
    """
    return (
        not any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results)
        and rsp.HasField("requirements")
        and rsp.requirements == hint
        and rsp.HasField("context") == call.HasField("context")
        and rsp.context == call.context
    )


async def _run_step(
    runner: Runner,
    ref: str,
    first: fnv1.RunFunctionRequest,
    build: Callable[[], fnv1.RunFunctionRequest],
    store: Store,
    hint: fnv1.Requirements | None = None,
) -> fnv1.RunFunctionResponse:
    """Call a function until its requirements stabilise (xfn.FetchingFunctionRunner).

    Each call gets a request of its own (a function may touch what it is given): ``first``, then
    the step's request ``build`` makes anew with what the previous call required fetched
    straight into it. With a ``hint`` (what the step required when it last ran), ``first`` holds
    what the hint requires; when that call requires the same again, it is the answer, else the
    calls start over from the step's own request.
    """
    call = first
    if hint is not None:
        rsp = await _call(runner, ref, call)
        if _settled_on(hint, call, rsp):
            return rsp
        call = build()
    previous: fnv1.Requirements | None = None
    base: fnv1.RunFunctionRequest | None = None
    for i in range(MAX_REQUIREMENTS_ITERATIONS + 1):
        rsp = await _call(runner, ref, call)
        if any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results):
            return rsp
        current = rsp.requirements if rsp.HasField("requirements") else None
        if current == previous:
            return rsp
        if base is None:
            base = build()  # untouched by any call
        nxt = _next_request(base, store, current or fnv1.Requirements(), rsp)
        if i == 0 and _sees_the_same(base, nxt):
            # The first call already saw everything its requirements resolve to.
            return rsp
        previous, call = current, nxt
    msg = f"requirements didn't stabilize after the maximum number of iterations ({MAX_REQUIREMENTS_ITERATIONS})"
    raise RenderError(msg)


def _event(step: str, r: fnv1.Result) -> Event:
    reason = r.reason or REASON_COMPOSE
    if r.severity == fnv1.SEVERITY_WARNING:
        return warning(reason, f'Pipeline step "{step}": {r.message}')
    if r.severity == fnv1.SEVERITY_NORMAL:
        return normal(reason, f'Pipeline step "{step}": {r.message}')
    # A severity newer than this protocol: Crossplane assumes a warning.
    msg = f'Pipeline step "{step}" returned a result of unknown severity (assuming warning): {r.message}'
    return warning(reason, msg)


def _conditions(rsp: fnv1.RunFunctionResponse) -> list[dict[str, Any]]:
    return [
        {"type": c.type, "status": _STATUS[c.status], "reason": c.reason, "message": c.message} for c in rsp.conditions
    ]


async def run_pipeline(
    pipeline: Sequence[Mapping[str, Any]],
    observed: bytes,
    context: struct_pb2.Struct,
    store: Store,
    runners: Runners,
    hints: Mapping[str, fnv1.Requirements] | None = None,
) -> PipelineResult:
    """Run every step in order over ``observed`` (a State's bytes); return the last desired state, events, conditions.

    ``hints`` are what steps required when they last ran (``PipelineResult.requirements``), by
    step name: a step whose function requires the same again is called once, not twice. Only
    for functions whose requirements follow from the XR and what they are given, and that leave
    the context alone when they have what they require (Modelplane's).

    Raises:
        PipelineFatalError: A step returned a fatal result.
        RenderError: A step could not run (unknown function, bad input, unstable requirements).
    """
    out = PipelineResult(context=context)
    for step in pipeline:
        name = str(step.get("step", ""))
        ref = str((step.get("functionRef") or {}).get("name", ""))
        hint = (hints or {}).get(name)
        build = functools.partial(_step_request, step, store, observed, out.desired, out.context)
        # A step's request that holds answers of its own (bootstrap required resources) is never kept.
        bootstrap = (step.get("requirements") or {}).get("requiredResources")
        kept = runners.requests if hint is not None and not bootstrap and not hint.extra_resources else None
        req = build(None if kept is None else kept.start(ref))
        try:
            runner = runners.get(ref)
            if hint is not None:
                # The first call is given what the step required last, in the kept request if any.
                req = require(req, store, hint) if kept is None else kept.fill(ref, store, hint)
            rsp = await _run_step(runner, ref, req, build, store, hint)
        except PipelineFatalError:
            raise
        except RenderError as e:
            msg = f'cannot run Composition pipeline step "{name}": {e}'
            raise RenderError(msg) from e
        out.desired = rsp.desired
        out.context = rsp.context if rsp.HasField("context") else None
        out.conditions.extend(_conditions(rsp))
        if rsp.HasField("requirements"):
            out.requirements[name] = rsp.requirements
        for r in rsp.results:
            if r.severity == fnv1.SEVERITY_FATAL:
                raise PipelineFatalError(name, r.message)
            out.events.append(_event(name, r))
    return out
