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
import copy
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format, struct_pb2

from modelplane.render.events import REASON_COMPOSE, Event, normal, warning
from modelplane.render.model import RenderError, Runner
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

    def __init__(self, given: Mapping[str, Runner] | None) -> None:
        """Use ``given`` runners only, or when None load Modelplane's."""
        self._given = given
        self._loaded: dict[str, Runner] = {}

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
    step: Mapping[str, Any], store: Store, observed: fnv1.State, desired: fnv1.State, ctx: struct_pb2.Struct | None
) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest(observed=observed, desired=desired)
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


def _fetch_all(
    store: Store, current: fnv1.Requirements, bootstrap: Mapping[str, fnv1.Resources]
) -> tuple[dict[str, fnv1.Resources], dict[str, fnv1.Resources], set[str]]:
    resources = {k: copy.deepcopy(v) for k, v in bootstrap.items()}
    resources.update({n: store.fetch(rs) for n, rs in current.resources.items()})
    extra = {n: store.fetch(rs) for n, rs in current.extra_resources.items()}
    # No schemas are supplied to render, so every required schema is empty.
    return resources, extra, set(current.schemas)


async def _run_step(runner: Runner, ref: str, req: fnv1.RunFunctionRequest, store: Store) -> fnv1.RunFunctionResponse:
    """Call a function until its requirements stabilise (xfn.FetchingFunctionRunner)."""
    previous: fnv1.Requirements | None = None
    bootstrap = dict(req.required_resources.items())
    bootstrap_schemas = set(req.required_schemas)
    for i in range(MAX_REQUIREMENTS_ITERATIONS + 1):
        call = fnv1.RunFunctionRequest()
        call.CopyFrom(req)
        rsp = await _call(runner, ref, call)
        if any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results):
            return rsp
        current = rsp.requirements if rsp.HasField("requirements") else None
        if current == previous:
            return rsp
        resources, extra, schemas = _fetch_all(store, current or fnv1.Requirements(), bootstrap)
        schemas |= bootstrap_schemas
        if (
            i == 0
            and dict(req.required_resources.items()) == resources
            and dict(req.extra_resources.items()) == extra
            and set(req.required_schemas) == schemas
        ):
            # The first call already saw everything its requirements resolve to.
            return rsp
        previous = current
        req.ClearField("required_resources")
        req.ClearField("extra_resources")
        req.ClearField("required_schemas")
        for name, value in resources.items():
            req.required_resources[name].CopyFrom(value)
        for name, value in extra.items():
            req.extra_resources[name].CopyFrom(value)
        for name in schemas:
            req.required_schemas[name].SetInParent()
        if rsp.HasField("context"):
            req.context.CopyFrom(rsp.context)
        else:
            req.ClearField("context")
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
    observed: fnv1.State,
    context: struct_pb2.Struct,
    store: Store,
    runners: Runners,
) -> PipelineResult:
    """Run every step in order; return the last desired state, the events and the conditions.

    Raises:
        PipelineFatalError: A step returned a fatal result.
        RenderError: A step could not run (unknown function, bad input, unstable requirements).
    """
    out = PipelineResult(context=context)
    for step in pipeline:
        name = str(step.get("step", ""))
        ref = str((step.get("functionRef") or {}).get("name", ""))
        req = _step_request(step, store, observed, out.desired, out.context)
        try:
            rsp = await _run_step(runners.get(ref), ref, req, store)
        except PipelineFatalError:
            raise
        except RenderError as e:
            msg = f'cannot run Composition pipeline step "{name}": {e}'
            raise RenderError(msg) from e
        out.desired = rsp.desired
        out.context = rsp.context if rsp.HasField("context") else None
        out.conditions.extend(_conditions(rsp))
        for r in rsp.results:
            if r.severity == fnv1.SEVERITY_FATAL:
                raise PipelineFatalError(name, r.message)
            out.events.append(_event(name, r))
    return out
