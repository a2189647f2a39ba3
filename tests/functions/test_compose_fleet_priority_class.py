"""compose-fleet-priority-class: a class that parses is valid and reports its value."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_fleet_priority_class.fn import FunctionRunner


def _run(spec: dict[str, Any] | None) -> dict[str, Any]:
    xr: dict[str, Any] = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "FleetPriorityClass",
        "metadata": {"name": "p"},
    }
    if spec is not None:
        xr["spec"] = spec
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    return got


@pytest.mark.parametrize(
    ("spec", "status", "condition", "ready"),
    [
        pytest.param(
            {"value": 1000},
            {"value": 1000, "readyVerdict": True},
            ("STATUS_CONDITION_TRUE", "Valid", "value 1000"),
            True,
            id="valid",
        ),
        pytest.param(
            None,
            {"readyVerdict": False},
            ("STATUS_CONDITION_FALSE", "InvalidSpec", "spec: required"),
            False,
            id="no-spec",
        ),
        pytest.param(
            {"value": "high"},
            {"readyVerdict": False},
            ("STATUS_CONDITION_FALSE", "InvalidSpec", "spec.value: Input should be a valid integer"),
            False,
            id="not-a-number",
        ),
    ],
)
def test_reports_its_value(
    spec: dict[str, Any] | None, status: dict[str, Any] | None, condition: tuple[str, str, str], ready: bool
) -> None:
    got = _run(spec)
    (c,) = got["conditions"]
    assert (c["status"], c["reason"], c["message"].split(",")[0]) == condition
    assert got["desired"]["composite"].get("resource", {}).get("status") == status
    assert got["desired"]["composite"]["ready"] == ("READY_TRUE" if ready else "READY_FALSE")
