"""compose-model-replica: a replica is Ready only when its workload serves the spec it composes now.

Each case is a state seen on the e2e tier's real control plane during an
in-place update (a new image written to a Ready replica): the workload's Object
or the workload itself still shows the previous spec, Ready.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_replica.current import carries
from compose_model_replica.fn import FunctionRunner
from tests.functions.replica_fixtures import NAMESPACE, cluster, gpu_class, replica, request

NEW_IMAGE = "vllm/vllm-openai:v0.12.0"
Edit = Callable[[dict[str, Any]], None]


def _run(req: fnv1.RunFunctionRequest) -> dict[str, Any]:
    rsp = asyncio.run(FunctionRunner().RunFunction(req, None))
    out: dict[str, Any] = json_format.MessageToDict(rsp)
    return out


def _xr(image: str = "") -> dict[str, Any]:
    xr = replica("single-gpu")
    if image:
        xr["spec"]["workers"]["template"]["spec"]["containers"][0]["image"] = image
    return xr


def _served(xr: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every Object ``xr`` composes, observed fully applied, synced at generation 2, its workload Ready at 2."""
    req = request(xr, cluster_body=cluster(backend="KServe"), classes=(gpu_class(),))
    desired = _run(req)["desired"]["resources"]
    out = {}
    for key, body in desired.items():
        obj = body["resource"]
        if obj["kind"] != "Object":
            continue
        manifest = copy.deepcopy(obj["spec"]["forProvider"]["manifest"])
        remote = {**manifest, "metadata": {**manifest["metadata"], "generation": 2}}
        if manifest["kind"] == "LLMInferenceService":
            remote["status"] = {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True"}]}
        out[key] = {
            "apiVersion": obj["apiVersion"],
            "kind": "Object",
            "metadata": {"name": f"x-{key}", "namespace": NAMESPACE, "generation": 2},
            "spec": copy.deepcopy(obj["spec"]),
            "status": {
                "atProvider": {"manifest": remote},
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": "Available"},
                    {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "observedGeneration": 2},
                ],
            },
        }
    return out


def _image(obj: dict[str, Any], image: str) -> None:
    obj["spec"]["forProvider"]["manifest"]["spec"]["template"]["containers"][0]["image"] = image


def _old_object(obj: dict[str, Any]) -> None:
    """The Object as it was before the change: the previous image, everywhere."""
    _image(obj, "vllm/vllm-openai:v0.11.0")
    obj["status"]["atProvider"]["manifest"]["spec"]["template"]["containers"][0]["image"] = "vllm/vllm-openai:v0.11.0"


def _not_applied(obj: dict[str, Any]) -> None:
    obj["metadata"]["generation"] = 3


def _not_observed(obj: dict[str, Any]) -> None:
    obj["status"]["atProvider"]["manifest"]["metadata"]["generation"] = 3


def _no_generations(obj: dict[str, Any]) -> None:
    """A provider and a controller that write no observedGeneration: nothing says it is behind."""
    del obj["status"]["conditions"][1]["observedGeneration"]
    del obj["status"]["atProvider"]["manifest"]["status"]["observedGeneration"]
    obj["metadata"]["generation"] = 3


def _untouched(_obj: dict[str, Any]) -> None:
    pass


CASES = [
    pytest.param(_untouched, True, "", id="served-at-its-generation"),
    pytest.param(_no_generations, True, "", id="no-observed-generation-written"),
    pytest.param(_old_object, False, "the change is being written to its Object", id="change-not-in-the-object-yet"),
    pytest.param(_not_applied, False, "has not applied generation 3 of its Object", id="object-not-applied-yet"),
    pytest.param(_not_observed, False, "has not observed generation 3 yet (it last observed 2)", id="kserve-behind"),
]


@pytest.mark.parametrize(("edit", "ready", "why"), CASES)
def test_ready_only_for_the_spec_composed_now(edit: Edit, ready: bool, why: str) -> None:
    xr = _xr(NEW_IMAGE)
    observed = _served(xr)
    edit(observed["workload"])
    out = _run(request(xr, cluster_body=cluster(backend="KServe"), classes=(gpu_class(),), observed=observed))
    serving = {c["type"]: c for c in out.get("conditions", [])}["Serving"]
    composite = out["desired"]["composite"]
    assert composite["ready"] == ("READY_TRUE" if ready else "READY_FALSE"), serving
    assert serving["reason"] == ("Available" if ready else "Updating"), serving
    assert why in serving.get("message", ""), serving
    # A replica that is not Ready publishes no endpoint: no traffic to the spec still loading.
    assert ("endpoint" in composite["resource"]["status"]) is ready


CARRIES = [
    pytest.param({"a": 1.0, "b": [1, {"c": "x"}], "d": True}, {"a": 1, "b": [1.0, {"c": "x"}]}, True, id="numbers"),
    pytest.param({"a": {"b": 1, "added": 2}}, {"a": {"b": 1}}, True, id="fields-the-server-adds"),
    pytest.param({"a": [1, 2]}, {"a": [1]}, False, id="list-length"),
    pytest.param({"a": "v1"}, {"a": "v2"}, False, id="changed-value"),
    pytest.param({}, {"a": None}, True, id="null-is-absent"),
    pytest.param({"a": 1}, {"a": True}, False, id="bool-is-not-a-number"),
    pytest.param(None, {"a": 1}, False, id="nothing-observed"),
]


@pytest.mark.parametrize(("have", "want", "expected"), CARRIES)
def test_carries(have: Any, want: Any, expected: bool) -> None:
    assert carries(have, want) is expected
