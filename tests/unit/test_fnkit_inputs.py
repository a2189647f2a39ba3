"""Reading observed and required resources at a function's edge: any shape reads, bad fields are named once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.structs import readiness_at, string_at
from modelplane.fnkit.xr import InvalidXRError, parse_composite
from modelplane.problems import Problem
from modelplane_models.model_endpoint import ModelEndpoint

READY = {"type": "Ready", "status": "True", "reason": "Available", "message": "up"}


def _request(observed: dict[str, Any] | None = None, **required: list[dict[str, Any]]) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest()
    if observed is not None:
        req.observed.resources["thing"].resource.CopyFrom(resource.dict_to_struct(observed))
    for name, items in required.items():
        answered = req.required_resources[name]
        answered.SetInParent()
        for item in items:
            answered.items.add().resource.CopyFrom(resource.dict_to_struct(item))
    return req


def _warnings(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]


@pytest.mark.parametrize(
    ("observed", "status", "problems"),
    [
        pytest.param({"status": {"conditions": [READY]}}, "True", [], id="ready"),
        pytest.param(None, "Unknown", [], id="not-observed"),
        pytest.param({}, "Unknown", [], id="no-status"),
        pytest.param({"status": None}, "Unknown", [], id="null-status"),
        pytest.param({"status": 3}, "Unknown", [Problem("status", "expected an object, got 3")], id="status-number"),
        pytest.param(
            {"status": {"conditions": 3}},
            "Unknown",
            [Problem("status.conditions", "expected a list, got 3")],
            id="conditions-number",
        ),
        pytest.param(
            {"status": {"conditions": "True"}},
            "Unknown",
            [Problem("status.conditions", "expected a list, got 'True'")],
            id="conditions-string",
        ),
        pytest.param(
            {"status": {"conditions": [1, READY]}},
            "True",
            [Problem("status.conditions[0]", "expected an object, got 1")],
            id="entry-number-then-ready",
        ),
        pytest.param(
            {"status": {"conditions": [{"type": ["Ready"], "status": "True"}]}},
            "Unknown",
            [Problem("status.conditions[0].type", "expected a string, got a list")],
            id="type-list",
        ),
        pytest.param(
            {"status": {"conditions": [{"type": "Ready", "status": True, "lastTransitionTime": 5}]}},
            "Unknown",
            [Problem("status.conditions[0].status", "expected a string, got true")],
            id="status-bool-and-bad-time",
        ),
    ],
)
def test_condition_reads_any_shape(observed: dict[str, Any] | None, status: str, problems: list[Problem]) -> None:
    req = _request(observed)
    found: list[Problem] = []
    thing = req.observed.resources.get("thing")
    got = readiness_at(thing.resource.fields if thing is not None else None, "Ready", found)
    assert got.status == status
    assert found == problems
    rsp = response.to(req)
    assert inputs.ready(req, rsp, "thing").true is (status == "True")
    assert len(_warnings(rsp)) == (1 if problems else 0)


def test_condition_carries_reason_and_message() -> None:
    got = readiness_at(resource.dict_to_struct({"status": {"conditions": [READY]}}).fields)
    assert (got.status, got.reason, got.message) == ("True", "Available", "up")


def test_observed_conforms_and_warns_once() -> None:
    req = _request({"status": {"conditions": 3, "address": "10.0.0.1"}})
    rsp = response.to(req)
    shape = {"status": {"conditions": [object], "address": str}}
    for _ in range(2):
        assert inputs.observed(req, rsp, "thing", shape) == {"status": {"address": "10.0.0.1"}}
    assert _warnings(rsp) == [
        "observed composed resource 'thing' is malformed, read without the fields that do not fit: "
        "status.conditions: expected a list, got 3"
    ]
    assert inputs.observed(req, rsp, "absent", shape) is None


def test_required_names_each_object() -> None:
    items: list[dict[str, Any]] = [
        {"kind": "ModelEndpoint", "metadata": {"name": "e", "namespace": "ml"}, "spec": {"url": 7}},
        {"kind": "ModelEndpoint", "metadata": ["not", "an", "object"]},
        {"spec": {"url": "http://x/"}},
    ]
    req = _request(endpoints=items)
    rsp = response.to(req)
    got = list(inputs.required(req, rsp, "endpoints", {"metadata": {"name": str}, "spec": {"url": str}}))
    assert got == [
        {"kind": "ModelEndpoint", "metadata": {"name": "e", "namespace": "ml"}, "spec": {}},
        {"kind": "ModelEndpoint"},
        {"spec": {"url": "http://x/"}},
    ]
    assert [w.split(" is malformed")[0] for w in _warnings(rsp)] == [
        "required resource ModelEndpoint ml/e",
        "required resource endpoints[1]",
    ]
    assert list(inputs.required(req, rsp, "not-fetched", {})) == []


def test_report_names_three_problems_and_counts_the_rest() -> None:
    rsp = fnv1.RunFunctionResponse()
    inputs.report(rsp, "x", [Problem(f"f{i}", "bad") for i in range(5)])
    assert _warnings(rsp) == [
        "x is malformed, read without the fields that do not fit: f0: bad; f1: bad; f2: bad (and 2 more)"
    ]


@pytest.mark.parametrize(
    ("obj", "path", "want"),
    [
        pytest.param({"spec": {"ref": {"name": "a"}}}, ("spec", "ref", "name"), "a", id="found"),
        pytest.param({"spec": {"ref": {"name": 3}}}, ("spec", "ref", "name"), "", id="not-a-string"),
        pytest.param({"spec": ["ref"]}, ("spec", "ref", "name"), "", id="list-on-the-way"),
        pytest.param({}, ("spec",), "", id="missing"),
    ],
)
def test_string_at(obj: dict[str, Any], path: tuple[str, ...], want: str) -> None:
    assert string_at(resource.dict_to_struct(obj), *path) == want


def test_runner_guard_in_process() -> None:
    def compose(req: fnv1.RunFunctionRequest, _rsp: fnv1.RunFunctionResponse, _ledger: Ledger, _log: object) -> None:
        _ = list(req.observed.resources)[1]

    rsp = asyncio.run(ComposeRunner(compose).RunFunction(fnv1.RunFunctionRequest(), None))
    assert [(r.severity, r.message.split(" at ")[0]) for r in rsp.results] == [
        (fnv1.SEVERITY_FATAL, "internal error, nothing was changed: IndexError")
    ]


@pytest.mark.parametrize(
    ("status", "spec", "problems"),
    [
        pytest.param({"conditions": 3}, {"url": "http://x/"}, None, id="malformed-status-ignored"),
        pytest.param("garbage", {"url": "http://x/"}, None, id="status-a-string-ignored"),
        pytest.param({}, {"url": 3}, ["spec.url: Input should be a valid string"], id="spec-checked"),
    ],
)
def test_parse_composite_reads_the_spec_not_the_status(
    status: object, spec: dict[str, Any], problems: list[str] | None
) -> None:
    req = fnv1.RunFunctionRequest()
    xr = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelEndpoint", "spec": spec, "status": status}
    req.observed.composite.resource.CopyFrom(resource.dict_to_struct(xr))
    if problems is None:
        assert parse_composite(req, ModelEndpoint).status is None
    else:
        with pytest.raises(InvalidXRError) as err:
            parse_composite(req, ModelEndpoint)
        assert [str(p) for p in err.value.problems] == problems
