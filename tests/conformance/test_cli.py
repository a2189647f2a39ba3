"""Reading ``crossplane resource validate --output json`` reports back into one verdict per resource (cli.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conformance.cli import ValidateError, Verdict, key, parse


def _obj(kind: str, name: str = "", *, resource_name: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} if name else {}
    if resource_name:
        meta["annotations"] = {"crossplane.io/composition-resource-name": resource_name}
    return {"apiVersion": "example.org/v1", "kind": kind, "metadata": meta}


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(_obj("A", "a"), ("example.org/v1", "A", "a"), id="by-name"),
        pytest.param(_obj("A", resource_name="pool"), ("example.org/v1", "A", "pool"), id="by-resource-name"),
        pytest.param(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}, ("v1", "Namespace", "x"), id="core"
        ),
    ],
)
def test_key(obj: dict[str, Any], want: tuple[str, str, str]) -> None:
    assert key(obj) == want


def _report(*resources: dict[str, Any]) -> str:
    return json.dumps({"summary": {"total": len(resources)}, "resources": list(resources)}, indent=2)


def _resource(kind: str, name: str, status: str, *errors: tuple[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "example.org/v1", "kind": kind, "name": name, "status": status}
    if errors:
        out["errors"] = [{"type": t, "message": m} for t, m in errors]
    return out


@pytest.mark.parametrize(
    ("stdout", "want"),
    [
        pytest.param(
            _report(
                _resource("A", "a", "valid"),
                _resource(
                    "A",
                    "b",
                    "invalid",
                    ("schema", "spec.x: Required value"),
                    ("cel", "spec: Invalid value: must be even"),
                ),
                _resource("A", "a", "invalid", ("unknownField", 'spec.y: Invalid value: "y": unknown field: "y"')),
            ),
            [
                Verdict("example.org/v1", "A", "a", ()),
                Verdict("example.org/v1", "A", "b", ("spec.x: Required value", "spec: Invalid value: must be even")),
                Verdict("example.org/v1", "A", "a", ('spec.y: Invalid value: "y": unknown field: "y"',)),
            ],
            id="one-verdict-per-resource-in-order",
        ),
        pytest.param(
            _report(
                _resource("B", "b", "defaultingFailed", ("defaulting", "no schema")),
                _resource("B", "c", "invalid", ("defaulting", "no schema"), ("schema", "spec: Required value")),
            ),
            [Verdict("example.org/v1", "B", "b", ()), Verdict("example.org/v1", "B", "c", ("spec: Required value",))],
            id="defaulting-warnings-are-not-errors",
        ),
    ],
)
def test_parse(stdout: str, want: list[Verdict]) -> None:
    assert parse(stdout) == want


def test_verdict_gvk() -> None:
    assert Verdict("apps/v1", "Deployment", "x", ()).gvk == "apps/v1, Kind=Deployment"


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        pytest.param(
            _report(_resource("A", "a", "missingSchema")), "no schema for: example.org/v1, Kind=A", id="missing"
        ),
        pytest.param("[✓] example.org/v1, Kind=A, a validated successfully\n", "no JSON report", id="text"),
    ],
)
def test_parse_refuses(stdout: str, message: str) -> None:
    with pytest.raises(ValidateError, match=message):
        parse(stdout)
