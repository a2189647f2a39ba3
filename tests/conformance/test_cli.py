"""Reading ``crossplane beta validate`` reports back into one verdict per resource (cli.py), without the CLI."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.conformance.cli import ValidateError, Verdict, key, parse, plan


def _obj(kind: str, name: str = "", *, resource_name: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} if name else {}
    if resource_name:
        meta["annotations"] = {"crossplane.io/composition-resource-name": resource_name}
    return {"apiVersion": "example.org/v1", "kind": kind, "metadata": meta}


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(_obj("A", "a"), ("example.org/v1, Kind=A", "a"), id="by-name"),
        pytest.param(_obj("A", resource_name="pool"), ("example.org/v1, Kind=A", "pool"), id="by-resource-name"),
        pytest.param(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}},
            ("/v1, Kind=Namespace", "x"),
            id="core-group",
        ),
    ],
)
def test_key(obj: dict[str, Any], want: tuple[str, str]) -> None:
    assert key(obj) == want


@pytest.mark.parametrize(
    ("objects", "calls"),
    [
        pytest.param([], 0, id="nothing"),
        pytest.param([_obj("A", "a"), _obj("A", "b"), _obj("B", "a")], 1, id="all-distinct"),
        pytest.param([_obj("A", "x"), _obj("A", "x"), _obj("B", "y"), _obj("B", "z")], 1, id="alike-kept-apart"),
        pytest.param([_obj("A", "x"), _obj("A", "x"), _obj("A", "x"), _obj("B", "y")], 2, id="too-many-alike"),
        pytest.param([_obj("A", "x")] * 3, 3, id="all-alike"),
    ],
)
def test_plan(objects: list[dict[str, Any]], calls: int) -> None:
    got = plan(objects)
    assert len(got) == calls
    assert sorted(i for call in got for i in call) == list(range(len(objects)))
    for call in got:
        keys = [key(objects[i]) for i in call]
        assert all(a != b for a, b in itertools.pairwise(keys)), keys


_TOTAL = "Total 3 resources: 0 missing schemas, 1 success cases, 2 failure cases"


@pytest.mark.parametrize(
    ("stdout", "want"),
    [
        pytest.param(
            "[✓] example.org/v1, Kind=A, a validated successfully\n"
            "[x] schema validation error example.org/v1, Kind=A, b : spec.x: Required value\n"
            "[x] CEL validation error example.org/v1, Kind=A, b : spec: Invalid value: must be even\n"
            "[x] schema validation error /v1, Kind=Namespace, b : spec.finalizers: Invalid value\n" + _TOTAL,
            [
                Verdict("example.org/v1, Kind=A", "a", ()),
                Verdict("example.org/v1, Kind=A", "b", ("spec.x: Required value", "spec: Invalid value: must be even")),
                Verdict("/v1, Kind=Namespace", "b", ("spec.finalizers: Invalid value",)),
            ],
            id="blocks-in-order",
        ),
        pytest.param(
            "[x] CEL validation error example.org/v1, Kind=A, a : spec: Invalid value: line one\nline two\n"
            "[!] failed to apply defaults for example.org/v1, Kind=B, b: no schema\n"
            "[✓] example.org/v1, Kind=B, b validated successfully\n" + _TOTAL,
            [
                Verdict("example.org/v1, Kind=A", "a", ("spec: Invalid value: line one\nline two",)),
                Verdict("example.org/v1, Kind=B", "b", ()),
            ],
            id="multi-line-message-and-defaulting-warning",
        ),
    ],
)
def test_parse(stdout: str, want: list[Verdict]) -> None:
    assert parse(stdout) == want


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        pytest.param(
            "[!] could not find CRD/XRD for: example.org/v1, Kind=A\n" + _TOTAL, "no schema for", id="missing"
        ),
        pytest.param("[✓] example.org/v1, Kind=A, a validated successfully\n", "no summary", id="no-summary"),
        pytest.param("schemas does not exist, downloading: x\n" + _TOTAL, "unexpected line", id="download"),
    ],
)
def test_parse_refuses(stdout: str, message: str) -> None:
    with pytest.raises(ValidateError, match=message):
        parse(stdout)
