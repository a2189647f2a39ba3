"""The never-drop ledger: every observed composed resource ends a call desired, kept or removed for a reason.

The runner's last guard keeps what a writer forgot, and a warning names it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.runner import ComposeRunner

RUNNING = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "a", "uid": "u-1", "resourceVersion": "7", "labels": {"app": "a"}},
    "spec": {"size": 3},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}
# What keeping it writes: as observed, without the status and what the API server owns.
KEPT: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "a", "labels": {"app": "a"}},
    "spec": {"size": 3},
}
NEW = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}

Writer = Callable[[Ledger], None]


def _call(writer: Writer) -> fnv1.RunFunctionResponse:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="t"))
    for key in ("a", "b"):
        req.observed.resources[key].resource.CopyFrom(resource.dict_to_struct({**RUNNING, "metadata": {"name": key}}))
    req.observed.resources["a"].resource.CopyFrom(resource.dict_to_struct(RUNNING))

    def compose(_req: fnv1.RunFunctionRequest, _rsp: fnv1.RunFunctionResponse, ledger: Ledger, _log: object) -> None:
        writer(ledger)

    return asyncio.run(ComposeRunner(compose).RunFunction(req, None))


def _desired(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    return {k: resource.struct_to_dict(v.resource) for k, v in rsp.desired.resources.items()}


def _warnings(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]


GUARDED = "kept a unchanged: nothing in this call accounted for it (a bug in the function)"


@pytest.mark.parametrize(
    ("writer", "want", "warnings"),
    [
        pytest.param(lambda ledger: ledger.put("b", NEW), {"a": KEPT, "b": NEW}, [GUARDED], id="a-writer-forgets-a"),
        pytest.param(
            lambda _ledger: None,
            {"a": KEPT, "b": {**KEPT, "metadata": {"name": "b"}}},
            ["kept a, b unchanged: nothing in this call accounted for it (a bug in the function)"],
            id="a-writer-forgets-everything",
        ),
        pytest.param(
            lambda ledger: (ledger.put("b", NEW), ledger.remove(["a"], "spec.replicas scaled down")),
            {"b": NEW},
            [],
            id="removed-for-the-users-reason",
        ),
        pytest.param(
            lambda ledger: (ledger.put("b", NEW), ledger.keep(["a"], "its cluster cannot be read")),
            {"a": KEPT, "b": NEW},
            [],
            id="kept-on-purpose",
        ),
        pytest.param(
            lambda ledger: (ledger.put("b", NEW), ledger.remove_unwritten(lambda k: k == "a", lambda k: f"{k} went")),
            {"b": NEW},
            [],
            id="removed-as-a-family",
        ),
        pytest.param(
            lambda ledger: (
                ledger.put("b", NEW),
                ledger.carry("a", "held", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a2"}}),
            ),
            {"a": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a2"}, "spec": {"size": 3}}, "b": NEW},
            [],
            id="carried-with-its-observed-spec",
        ),
        pytest.param(
            lambda ledger: (ledger.put("b", NEW), ledger.keep(["a"], "orphan", annotations={"serving": "false"})),
            {"a": {**KEPT, "metadata": {**KEPT["metadata"], "annotations": {"serving": "false"}}}, "b": NEW},
            [],
            id="kept-with-an-annotation",
        ),
    ],
)
def test_every_observed_resource_is_accounted_for(
    writer: Writer, want: dict[str, dict[str, Any]], warnings: list[str]
) -> None:
    rsp = _call(writer)
    assert _desired(rsp) == want
    assert _warnings(rsp) == warnings


def test_a_removal_never_overrides_what_is_desired() -> None:
    def writer(ledger: Ledger) -> None:
        ledger.put("a", NEW)
        ledger.put("b", NEW)
        ledger.remove(["a", "b"], "gone")

    rsp = _call(writer)
    assert set(_desired(rsp)) == {"a", "b"}
    assert _warnings(rsp) == []


def test_a_fatal_result_applies_nothing_and_the_guard_adds_nothing() -> None:
    def writer(ledger: Ledger) -> None:
        ledger.put("b", NEW)
        raise KeyError("spec")

    rsp = _call(writer)
    assert _desired(rsp) == {}
    assert [fnv1.Severity.Name(r.severity) for r in rsp.results] == ["SEVERITY_FATAL"]
