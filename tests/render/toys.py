"""A scriptable toy composition function: its step input says what it does.

One function that can compose, set conditions, emit results, require
resources and pass context lets the engine tests and the conformance test
(against the real ``crossplane render``) share the same behaviour.

Input (all optional)::

    apiVersion: toy.modelplane.ai/v1
    kind: Script
    resources: {<name>: {resource: {...}, ready: "True"|"False"}}
    compositeStatus: {...}          # merged into the desired XR's status
    compositeSpec: {...}            # merged into the desired XR's spec
    compositeReady: "True"|"False"
    conditions: [{type, status, reason, message}]
    results: [{severity: Normal|Warning|Fatal|Unspecified, message, reason}]
    setContext: {<key>: <value>}
    contextToResource: {key: <context key>, resource: <name>}
    require: {<requirement>: {apiVersion, kind, name | matchLabels, namespace}}
    flapRequirements: true          # new requirements on every call
"""

from __future__ import annotations

import json
from typing import Any

import grpc
from crossplane.function import request, resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import json_format

_SEVERITY = {
    "Normal": fnv1.SEVERITY_NORMAL,
    "Warning": fnv1.SEVERITY_WARNING,
    "Fatal": fnv1.SEVERITY_FATAL,
    "Unspecified": fnv1.SEVERITY_UNSPECIFIED,
}
_STATUS = {
    "True": fnv1.STATUS_CONDITION_TRUE,
    "False": fnv1.STATUS_CONDITION_FALSE,
    "Unknown": fnv1.STATUS_CONDITION_UNKNOWN,
}
_READY = {"True": fnv1.READY_TRUE, "False": fnv1.READY_FALSE}


def _config_map(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


class ToyRunner(grpcv1.FunctionRunnerServiceServicer):
    """Does what its step input says; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def RunFunction(
        self, req: fnv1.RunFunctionRequest, _: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        """Run the script in the step input."""
        self.calls += 1
        rsp = response.to(req)
        script: dict[str, Any] = resource.struct_to_dict(req.input) if req.HasField("input") else {}

        for name, spec in sorted((script.get("resources") or {}).items()):
            resource.update(rsp.desired.resources[name], spec["resource"])
            if spec.get("ready") in _READY:
                rsp.desired.resources[name].ready = _READY[spec["ready"]]
        if script.get("compositeStatus"):
            resource.update(rsp.desired.composite, {"status": script["compositeStatus"]})
        if script.get("compositeSpec"):
            resource.update(rsp.desired.composite, {"spec": script["compositeSpec"]})
        if script.get("compositeReady") in _READY:
            rsp.desired.composite.ready = _READY[script["compositeReady"]]
        for c in script.get("conditions") or ():
            rsp.conditions.append(
                fnv1.Condition(
                    type=c["type"], status=_STATUS[c["status"]], reason=c["reason"], message=c.get("message")
                )
            )
        for r in script.get("results") or ():
            rsp.results.add(severity=_SEVERITY[r["severity"]], message=r["message"], reason=r.get("reason"))
        for key, value in sorted((script.get("setContext") or {}).items()):
            rsp.context[key] = value
        if script.get("contextToResource"):
            spec = script["contextToResource"]
            ctx = json_format.MessageToDict(req.context)
            value = json.dumps(ctx[spec["key"]], sort_keys=True) if spec["key"] in ctx else "<absent>"
            resource.update(rsp.desired.resources[spec["resource"]], _config_map(spec["resource"], {"value": value}))
        self._require(req, rsp, script)
        return rsp

    def _require(self, req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, script: dict[str, Any]) -> None:
        if script.get("flapRequirements"):
            rsp.requirements.resources[f"flap-{self.calls}"].CopyFrom(
                fnv1.ResourceSelector(api_version="v1", kind="ConfigMap", match_name=f"cm-{self.calls}")
            )
            return
        for name, sel in sorted((script.get("require") or {}).items()):
            rs = fnv1.ResourceSelector(api_version=sel["apiVersion"], kind=sel["kind"], namespace=sel.get("namespace"))
            if "name" in sel:
                rs.match_name = sel["name"]
            else:
                rs.match_labels.labels.update(sel.get("matchLabels") or {})
            rsp.requirements.resources[name].CopyFrom(rs)
            found = request.get_required_resources(req, name)
            if name not in req.required_resources:
                continue  # Not fetched yet: a normal wait.
            names = ",".join(r["metadata"]["name"] for r in found) or "<none>"
            resource.update(
                rsp.desired.resources[f"required-{name}"], _config_map(f"required-{name}", {"names": names})
            )


def toy_composition(*scripts: dict[str, Any], name: str = "c", step: str = "s{}") -> dict[str, Any]:
    """A Pipeline Composition for XThing running the toy function once per script (step names from ``step``)."""
    return {
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": name},
        "spec": {
            "compositeTypeRef": {"apiVersion": "example.org/v1", "kind": "XThing"},
            "mode": "Pipeline",
            "pipeline": [
                {"step": step.format(i), "functionRef": {"name": "toy"}, "input": s} for i, s in enumerate(scripts)
            ],
        },
    }
