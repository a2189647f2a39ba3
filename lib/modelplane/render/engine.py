r"""Run a Pipeline Composition in-process, the way ``crossplane render`` does.

The contract followed is the one of ``crossplane render`` as built by
``tools/crossplane.sh`` (github.com/crossplane/crossplane/v2 cmd/crank
v2.2.1, the newest CLI the Go module proxy serves; see that script):

- every step gets the observed XR and the observed composed resources keyed
  by their ``crossplane.io/composition-resource-name`` annotation, the
  desired state and context the previous step returned, its input, its
  credentials and its bootstrap required resources;
- a step is called again while the requirements it returns change (at most
  six calls, then an error), each time with the resources matching its
  selectors; only the last call's results count;
- a fatal result stops the render; other results become ``Result`` objects;
- the XR's ``Ready`` condition comes from the desired ``ready`` fields (the
  composite's own, else every composed resource's), followed by the
  functions' non-system conditions; every ``lastTransitionTime`` is the fixed
  ``2024-01-01T00:00:00Z`` the CLI uses;
- composed resources get ``generateName: <xr>-`` unless named (an observed
  resource keeps its name), the XR's namespace when it is namespaced, the
  composition-resource-name annotation, the ``crossplane.io/composite`` label
  (and claim labels) and a controller owner reference to the XR.

Where this engine knowingly differs from that CLI (see normalize.py):
ownerReferences carry a UID derived as Crossplane v2.3's render engine
derives it (SHA-1 UUID of "<group>/<version>, Kind=<kind>\x00<ns>\x00<name>")
when the XR has none, where the v2.2 CLI leaves it empty; and a required
resource selector with a namespace only matches resources in that namespace,
as in a real cluster, where the v2.2 CLI ignores the namespace.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import json_format, struct_pb2

from modelplane.render import goyaml

__all__ = [
    "CONDITION_TIME",
    "MAX_REQUIREMENTS_ITERATIONS",
    "RenderError",
    "RenderInputs",
    "RenderOutput",
    "include_full_xr",
    "render",
    "to_yaml",
]

RENDER_API_VERSION = "render.crossplane.io/v1beta1"
ANNOTATION_RESOURCE_NAME = "crossplane.io/composition-resource-name"
LABEL_COMPOSITE = "crossplane.io/composite"
LABEL_CLAIM_NAME = "crossplane.io/claim-name"
LABEL_CLAIM_NAMESPACE = "crossplane.io/claim-namespace"

# crossplane render stamps every condition with this fixed time (a required
# field whose real value would only be noise).
CONDITION_TIME = "2024-01-01T00:00:00Z"

# Crossplane calls a function at most this many times more than once while
# its requirements keep changing (xfn.MaxRequirementsIterations).
MAX_REQUIREMENTS_ITERATIONS = 5

_SYSTEM_CONDITIONS = frozenset({"Ready", "Synced", "Healthy"})
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
_FIRST_N = 3

Runner = grpcv1.FunctionRunnerServiceServicer


class RenderError(Exception):
    """The render cannot complete: bad input, an unknown function or a fatal result."""


@dataclass(frozen=True)
class RenderInputs:
    """What one render needs.

    Attributes:
        xr: The composite resource, as read from its YAML file.
        composition: The Pipeline-mode Composition.
        observed: Observed composed resources (with their
            ``crossplane.io/composition-resource-name`` annotation).
        required: Resources the functions may require (``--required-resources``).
        context: Initial function context, key to JSON value.
        functions: Runners by functionRef name; ``None`` loads Modelplane's own
            with ``modelplane.fnkit.registry.load_runner``.
        credentials: Secrets (``v1/Secret`` dicts, base64 ``data``) that steps'
            ``credentials`` name (``--function-credentials``).
    """

    xr: dict[str, Any]
    composition: dict[str, Any]
    observed: Sequence[dict[str, Any]] = ()
    required: Sequence[dict[str, Any]] = ()
    context: Mapping[str, Any] = field(default_factory=dict)
    functions: Mapping[str, Runner] | None = None
    credentials: Sequence[dict[str, Any]] = ()


@dataclass(frozen=True)
class RenderOutput:
    """What ``crossplane render`` prints, as dicts.

    Attributes:
        xr: The XR: apiVersion, kind, name (and namespace) plus the desired
            composite the pipeline returned and the conditions.
        composed: Desired composed resources, sorted by composition resource name.
        results: Non-fatal results of each step's last call, as ``Result`` objects.
        context: The context the last step returned, as a ``Context`` object.
    """

    xr: dict[str, Any]
    composed: list[dict[str, Any]]
    results: list[dict[str, Any]]
    context: dict[str, Any]


def render(inputs: RenderInputs) -> RenderOutput:
    """Run the Composition's pipeline over the XR and shape the output as the CLI does.

    Raises:
        RenderError: The inputs are invalid, a function is unknown or fails, a
            step returns a fatal result or its requirements never stabilise.
    """
    return asyncio.run(_render(inputs))


def to_yaml(output: RenderOutput, *, include_function_results: bool, include_context: bool) -> str:
    """The YAML stream ``crossplane render`` prints for ``output``."""
    docs: list[Mapping[str, Any]] = [output.xr, *output.composed]
    if include_function_results:
        docs.extend(output.results)
    if include_context:
        docs.append(output.context)
    return "".join("---\n" + goyaml.dump_document(d) for d in docs)


def include_full_xr(output: RenderOutput, xr: Mapping[str, Any]) -> RenderOutput:
    """``--include-full-xr``: the input XR's spec and metadata replace the output XR's."""
    for key in ("spec", "metadata"):
        if key not in xr:
            msg = f"cannot get composite resource {key}"
            raise RenderError(msg)
    full = {**output.xr, "spec": copy.deepcopy(xr["spec"]), "metadata": copy.deepcopy(xr["metadata"])}
    return RenderOutput(xr=full, composed=output.composed, results=output.results, context=output.context)


def xr_uid(xr: Mapping[str, Any]) -> str:
    """The XR's UID, or the deterministic one Crossplane v2.3's render engine gives an XR without."""
    meta = xr.get("metadata") or {}
    if meta.get("uid"):
        return str(meta["uid"])
    api_version = str(xr.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    gvk = f"{group}/{version}, Kind={xr.get('kind', '')}"
    return str(uuid.uuid5(uuid.UUID(int=0), f"{gvk}\x00{meta.get('namespace', '')}\x00{meta.get('name', '')}"))


def _to_struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(d)
    return s


def _from_value(v: struct_pb2.Value) -> Any:  # noqa: ANN401, PLR0911 - any JSON value, one return per kind
    kind = v.WhichOneof("kind")
    if kind == "struct_value":
        return _from_struct(v.struct_value)
    if kind == "list_value":
        return [_from_value(x) for x in v.list_value.values]
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "number_value":
        n = v.number_value
        # Go reads the JSON of an integral double back as an int64.
        if n.is_integer() and abs(n) < 2**63:
            return int(n)
        return n
    return None


def _from_struct(s: struct_pb2.Struct) -> dict[str, Any]:
    return {k: _from_value(v) for k, v in s.fields.items()}


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _loader() -> Callable[[str], Runner]:
    from modelplane.fnkit.registry import load_runner  # noqa: PLC0415 - import only when needed

    return load_runner


class _Runners:
    def __init__(self, given: Mapping[str, Runner] | None) -> None:
        self._given = given
        self._loaded: dict[str, Runner] = {}

    def get(self, ref: str) -> Runner:
        if self._given is not None:
            if ref not in self._given:
                known = ", ".join(sorted(self._given)) or "none"
                msg = f'unknown Function "{ref}" - it is not among the functions supplied ({known})'
                raise RenderError(msg)
            return self._given[ref]
        if ref not in self._loaded:
            try:
                self._loaded[ref] = _loader()(ref)
            except LookupError as e:
                raise RenderError(str(e)) from e
        return self._loaded[ref]


def _matches(rs: fnv1.ResourceSelector, r: Mapping[str, Any]) -> bool:
    if rs.api_version != r.get("apiVersion") or rs.kind != r.get("kind"):
        return False
    meta = r.get("metadata") or {}
    if rs.namespace and rs.namespace != meta.get("namespace", ""):
        return False
    match = rs.WhichOneof("match")
    if match == "match_name":
        return bool(rs.match_name == meta.get("name", ""))
    if match == "match_labels":
        labels = meta.get("labels") or {}
        return all(labels.get(k) == v for k, v in rs.match_labels.labels.items())
    return True


def _fetch(resources: Sequence[dict[str, Any]], rs: fnv1.ResourceSelector) -> fnv1.Resources:
    """Answer a selector from the supplied resources, as render's FilteringFetcher does."""
    out = fnv1.Resources()
    # Sorted by name (a stable sort) so the answer does not depend on file order.
    for r in sorted(resources, key=_name):
        if not _matches(rs, r):
            continue
        out.items.add().resource.CopyFrom(_to_struct(r))
        if rs.WhichOneof("match") == "match_name":
            break  # There can only be one resource with a given name.
    return out


def _secret(secrets: Sequence[dict[str, Any]], name: str, namespace: str) -> dict[str, Any]:
    for s in secrets:
        meta = s.get("metadata") or {}
        if meta.get("name") == name and meta.get("namespace", "") == namespace:
            return s
    msg = f'cannot get credentials from secret "{name}": secret "{name}" not found'
    raise RenderError(msg)


def _step_request(
    step: Mapping[str, Any],
    inputs: RenderInputs,
    observed: fnv1.State,
    desired: fnv1.State,
    ctx: struct_pb2.Struct | None,
) -> fnv1.RunFunctionRequest:
    name = step.get("step", "")
    req = fnv1.RunFunctionRequest(observed=observed, desired=desired)
    if ctx is not None:
        req.context.CopyFrom(ctx)
    if step.get("input") is not None:
        try:
            req.input.CopyFrom(json_format.ParseDict(step["input"], struct_pb2.Struct()))
        except json_format.ParseError as e:
            msg = f'cannot unmarshal input for Composition pipeline step "{name}": {e}'
            raise RenderError(msg) from e
    for cs in step.get("credentials") or ():
        ref = cs.get("secretRef")
        if cs.get("source") != "Secret" or ref is None:
            continue
        secret = _secret(inputs.credentials, ref.get("name", ""), ref.get("namespace", ""))
        data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
        req.credentials[cs["name"]].credential_data.data.update(data)
    requirements = step.get("requirements")
    if requirements is not None:
        for sel in requirements.get("requiredResources") or ():
            rs = _selector(sel)
            req.required_resources[sel["requirementName"]].CopyFrom(_fetch(inputs.required, rs))
    req.meta.capabilities.extend(_CAPABILITIES)
    return req


def _selector(sel: Mapping[str, Any]) -> fnv1.ResourceSelector:
    rs = fnv1.ResourceSelector(api_version=sel.get("apiVersion", ""), kind=sel.get("kind", ""))
    if sel.get("namespace"):
        rs.namespace = sel["namespace"]
    if sel.get("name"):
        rs.match_name = sel["name"]
    elif sel.get("matchLabels") is not None:
        rs.match_labels.labels.update(sel["matchLabels"])
    return rs


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


def _has_fatal(rsp: fnv1.RunFunctionResponse) -> bool:
    return any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results)


async def _run_step(
    runner: Runner, ref: str, req: fnv1.RunFunctionRequest, required: Sequence[dict[str, Any]]
) -> fnv1.RunFunctionResponse:
    """Call a function until its requirements stabilise (xfn.FetchingFunctionRunner)."""
    previous: fnv1.Requirements | None = None
    bootstrap = {k: copy.deepcopy(v) for k, v in req.required_resources.items()}
    for _ in range(MAX_REQUIREMENTS_ITERATIONS + 1):
        call = fnv1.RunFunctionRequest()
        call.CopyFrom(req)
        rsp = await _call(runner, ref, call)
        if _has_fatal(rsp):
            return rsp
        current = rsp.requirements if rsp.HasField("requirements") else None
        if current == previous:
            return rsp
        previous = current
        req.ClearField("extra_resources")
        req.ClearField("required_resources")
        req.ClearField("required_schemas")
        for name, value in bootstrap.items():
            req.required_resources[name].CopyFrom(value)
        if current is not None:
            for name, rs in current.extra_resources.items():
                req.extra_resources[name].CopyFrom(_fetch(required, rs))
            for name, rs in current.resources.items():
                req.required_resources[name].CopyFrom(_fetch(required, rs))
            for name in current.schemas:
                # No schemas are supplied to render, so every schema is absent.
                req.required_schemas[name].SetInParent()
        if rsp.HasField("context"):
            req.context.CopyFrom(rsp.context)
        else:
            req.ClearField("context")
    msg = f"requirements didn't stabilize after the maximum number of iterations ({MAX_REQUIREMENTS_ITERATIONS})"
    raise RenderError(msg)


def _check(inputs: RenderInputs) -> None:
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
    if (comp.get("spec") or {}).get("mode") != "Pipeline":
        msg = (
            "render only supports Composition Function pipelines: "
            f'Composition "{_name(comp)}" must use spec.mode: Pipeline'
        )
        raise RenderError(msg)


async def _render(inputs: RenderInputs) -> RenderOutput:
    _check(inputs)
    runners = _Runners(inputs.functions)
    observed_by_name: dict[str, dict[str, Any]] = {}
    for o in inputs.observed:
        anns = (o.get("metadata") or {}).get("annotations") or {}
        observed_by_name[str(anns.get(ANNOTATION_RESOURCE_NAME, ""))] = o
    observed = fnv1.State()
    observed.composite.resource.CopyFrom(_to_struct(inputs.xr))
    for name, o in observed_by_name.items():
        observed.resources[name].resource.CopyFrom(_to_struct(o))

    desired = fnv1.State()
    initial = struct_pb2.Struct()
    for k, v in inputs.context.items():
        initial.fields[k].CopyFrom(json_format.ParseDict(v, struct_pb2.Value()))
    ctx: struct_pb2.Struct | None = initial

    results: list[dict[str, Any]] = []
    conditions: list[dict[str, Any]] = []
    for step in (inputs.composition.get("spec") or {}).get("pipeline") or ():
        name = str(step.get("step", ""))
        ref = str((step.get("functionRef") or {}).get("name", ""))
        req = _step_request(step, inputs, observed, desired, ctx)
        try:
            rsp = await _run_step(runners.get(ref), ref, req, inputs.required)
        except RenderError as e:
            msg = f'cannot run pipeline step "{name}": {e}'
            raise RenderError(msg) from e
        desired = rsp.desired
        ctx = rsp.context if rsp.HasField("context") else None
        conditions.extend(
            {
                "type": c.type,
                "status": _STATUS[c.status],
                "lastTransitionTime": CONDITION_TIME,
                "reason": c.reason,
                **({"message": c.message} if c.message else {}),
            }
            for c in rsp.conditions
        )
        for r in rsp.results:
            if r.severity == fnv1.SEVERITY_FATAL:
                msg = f'pipeline step "{name}" returned a fatal result: {r.message}'
                raise RenderError(msg)
            results.append(
                {
                    "apiVersion": RENDER_API_VERSION,
                    "kind": "Result",
                    "step": name,
                    "severity": fnv1.Severity.Name(r.severity),
                    "message": r.message,
                }
            )

    composed, unready = _composed(inputs, desired, observed_by_name)
    xr = _xr(inputs.xr, desired, unready, conditions)
    fields = _from_struct(ctx) if ctx is not None else {}
    context = {"apiVersion": RENDER_API_VERSION, "kind": "Context", "fields": fields}
    return RenderOutput(xr=xr, composed=composed, results=results, context=context)


def _composed(
    inputs: RenderInputs, desired: fnv1.State, observed: Mapping[str, dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    out: list[dict[str, Any]] = []
    unready: list[str] = []
    for name, dr in desired.resources.items():
        if dr.ready != fnv1.READY_TRUE:
            unready.append(name)
        cd = _from_struct(dr.resource)
        meta = cd.setdefault("metadata", {})
        if name in observed:
            # Keep the name (and namespace) of the resource this state pertains to.
            ometa = observed[name].get("metadata") or {}
            for key in ("namespace", "name", "generateName"):
                if ometa.get(key):
                    meta[key] = ometa[key]
                else:
                    meta.pop(key, None)
        _set_composed_metadata(cd, inputs.xr, name)
        out.append(cd)
    out.sort(key=lambda c: c["metadata"]["annotations"][ANNOTATION_RESOURCE_NAME])
    return out, unready


def _set_composed_metadata(cd: dict[str, Any], xr: Mapping[str, Any], name: str) -> None:
    """render.SetComposedResourceMetadata: names, namespace, labels and the controller ref."""
    meta = cd.setdefault("metadata", {})
    xmeta = xr.get("metadata") or {}
    xlabels = xmeta.get("labels") or {}
    prefix = xlabels.get(LABEL_COMPOSITE) or xmeta.get("name", "")
    if not meta.get("name") and not meta.get("generateName"):
        meta["generateName"] = f"{prefix}-"
    if xmeta.get("namespace"):
        meta["namespace"] = xmeta["namespace"]
    meta.setdefault("annotations", {})[ANNOTATION_RESOURCE_NAME] = name
    labels = meta.setdefault("labels", {})
    labels[LABEL_COMPOSITE] = prefix
    claim = ((xr.get("spec") or {}).get("claimRef")) or {}
    if xlabels.get(LABEL_CLAIM_NAME) and xlabels.get(LABEL_CLAIM_NAMESPACE):
        labels[LABEL_CLAIM_NAMESPACE] = xlabels[LABEL_CLAIM_NAMESPACE]
        labels[LABEL_CLAIM_NAME] = xlabels[LABEL_CLAIM_NAME]
    elif claim:
        labels[LABEL_CLAIM_NAMESPACE] = claim.get("namespace", "")
        labels[LABEL_CLAIM_NAME] = claim.get("name", "")
    uid = xr_uid(xr)
    ref = {
        "apiVersion": xr.get("apiVersion", ""),
        "kind": xr.get("kind", ""),
        "name": xmeta.get("name", ""),
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    refs: list[dict[str, Any]] = list(meta.get("ownerReferences") or [])
    for r in refs:
        if r.get("controller") and r.get("uid") != uid:
            msg = (
                f'cannot render composed resource "{name}" metadata: cannot set composite resource '
                f'"{xmeta.get("name", "")}" as controller ref of composed resource: '
                f"{meta.get('name', '')} is already controlled by {r.get('kind', '')} "
                f"{r.get('name', '')} (UID {r.get('uid', '')})"
            )
            raise RenderError(msg)
    for i, r in enumerate(refs):
        if r.get("uid") == uid:
            refs[i] = ref
            break
    else:
        refs.append(ref)
    meta["ownerReferences"] = refs


def _xr(
    xr_in: Mapping[str, Any], desired: fnv1.State, unready: list[str], conditions: list[dict[str, Any]]
) -> dict[str, Any]:
    xr = _from_struct(desired.composite.resource) if desired.HasField("composite") else {}
    xr["apiVersion"] = xr_in.get("apiVersion", "")
    xr["kind"] = xr_in.get("kind", "")
    meta = xr.get("metadata")
    if not isinstance(meta, dict):
        meta = xr["metadata"] = {}
    xmeta = xr_in.get("metadata") or {}
    for key in ("name", "namespace"):
        if xmeta.get(key):
            meta[key] = xmeta[key]
        else:
            meta.pop(key, None)

    ready = desired.composite.ready
    cond: dict[str, Any] = {"type": "Ready", "status": "True", "reason": "Available"}
    if ready == fnv1.READY_FALSE:
        cond = {"type": "Ready", "status": "False", "reason": "Creating"}
    elif ready == fnv1.READY_UNSPECIFIED and unready:
        message = f"Unready resources: {_some(unready)}"
        cond = {"type": "Ready", "status": "False", "reason": "Creating", "message": message}
    cond["lastTransitionTime"] = CONDITION_TIME
    _set_conditions(xr, [cond, *(c for c in conditions if c["type"] not in _SYSTEM_CONDITIONS)])
    return xr


def _some(names: list[str]) -> str:
    """resource.StableNAndSomeMore(3, names)."""
    s = sorted(names)
    if len(s) > _FIRST_N:
        return f"{', '.join(s[:_FIRST_N])}, and {len(s) - _FIRST_N} more"
    if len(s) == _FIRST_N:
        return f"{', '.join(s[:-1])}, and {s[-1]}"
    return ", ".join(s)


_CONDITION_FIELDS = ("type", "status", "lastTransitionTime", "reason", "message", "observedGeneration")
_REQUIRED_FIELDS = frozenset({"type", "status", "lastTransitionTime", "reason"})


def _set_conditions(xr: dict[str, Any], new: list[dict[str, Any]]) -> None:
    """ConditionedStatus.SetConditions on the XR's status, as Crossplane merges conditions."""
    status = xr.get("status")
    if not isinstance(status, dict):
        status = xr["status"] = {}
    existing: list[dict[str, Any]] = []
    for c in status.get("conditions") or ():
        if isinstance(c, dict):
            # Crossplane reads conditions into its typed struct: other keys
            # drop out and empty optional ones are omitted.
            existing.append({k: c[k] for k in _CONDITION_FIELDS if k in c and (c[k] or k in _REQUIRED_FIELDS)})
    for cond in new:
        found = False
        for i, e in enumerate(existing):
            if e.get("type") != cond["type"]:
                continue
            found = True
            if not _equal(e, cond):
                existing[i] = cond
        if not found:
            existing.append(cond)
    status["conditions"] = existing


def _equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    keys = ["type", "status", "reason", "message"]
    if a.get("observedGeneration") and b.get("observedGeneration"):
        keys.append("observedGeneration")
    return all(a.get(k, "") == b.get(k, "") for k in keys)
