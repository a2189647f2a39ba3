"""Conforming objects of unknown shape: what does not fit is left out and named, nothing raises."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.layout import CONDITIONS, METADATA, Layout, conform, show
from modelplane.problems import Problem

OBSERVED: Layout = {
    **CONDITIONS,
    "metadata": METADATA,
    "spec": {"replicas": int, "weight": float, "enabled": bool, "quantity": (str, int)},
}
READY = {"type": "Ready", "status": "True"}


@pytest.mark.parametrize(
    ("obj", "want", "problems"),
    [
        pytest.param({"status": {"conditions": [READY]}}, {"status": {"conditions": [READY]}}, [], id="fits"),
        pytest.param(
            {"status": {"conditions": 3}},
            {"status": {}},
            [Problem("status.conditions", "expected a list, got 3")],
            id="conditions-a-number",
        ),
        pytest.param(
            {"status": {"conditions": [1, READY]}},
            {"status": {"conditions": [READY]}},
            [Problem("status.conditions[0]", "expected an object, got 1")],
            id="condition-not-an-object",
        ),
        pytest.param(
            {"status": {"conditions": "Ready"}},
            {"status": {}},
            [Problem("status.conditions", "expected a list, got 'Ready'")],
            id="conditions-a-string",
        ),
        pytest.param(
            {"status": {"conditions": [{"type": 5, "status": "True"}]}},
            {"status": {"conditions": [{"status": "True"}]}},
            [Problem("status.conditions[0].type", "expected a string, got 5")],
            id="condition-type-a-number",
        ),
        pytest.param(
            {"status": [READY]}, {}, [Problem("status", "expected an object, got a list")], id="status-a-list"
        ),
        pytest.param({"status": None, "spec": {"replicas": None}}, {"spec": {}}, [], id="nulls-are-absent"),
        pytest.param({"spec": {"replicas": 3.0}}, {"spec": {"replicas": 3}}, [], id="integral-double-is-an-int"),
        pytest.param(
            {"spec": {"replicas": 1e300}},
            {"spec": {}},
            [Problem("spec.replicas", "expected an integer, got 1e+300")],
            id="int-beyond-int64",
        ),
        pytest.param(
            {"spec": {"replicas": True, "enabled": 1}},
            {"spec": {}},
            [
                Problem("spec.replicas", "expected an integer, got true"),
                Problem("spec.enabled", "expected a boolean, got 1"),
            ],
            id="bool-is-not-a-number",
        ),
        pytest.param({"spec": {"weight": 2}}, {"spec": {"weight": 2}}, [], id="int-is-a-number"),
        pytest.param(
            {"spec": {"quantity": "8Gi"}}, {"spec": {"quantity": "8Gi"}}, [], id="alternatives-first-that-fits"
        ),
        pytest.param(
            {"spec": {"quantity": [8]}},
            {"spec": {}},
            [Problem("spec.quantity", "expected a string or an integer, got a list")],
            id="alternatives-none-fits",
        ),
        pytest.param(
            {"metadata": {"labels": {"a": "1", "b": 2}}},
            {"metadata": {"labels": {"a": "1"}}},
            [Problem("metadata.labels.b", "expected a string, got 2")],
            id="map-value-left-out",
        ),
        pytest.param(
            {"metadata": {"name": "x" * 100_000}},
            {"metadata": {"name": "x" * 100_000}},
            [],
            id="huge-string-fits",
        ),
        pytest.param({"other": [1, {"deep": None}]}, {"other": [1, {"deep": None}]}, [], id="undeclared-untouched"),
    ],
)
def test_conform(obj: dict[str, Any], want: dict[str, Any], problems: list[Problem]) -> None:
    got = conform(obj, OBSERVED)
    assert got.value == want
    assert list(got.problems) == problems


@pytest.mark.parametrize("obj", [3, "x", [1], None], ids=["number", "string", "list", "null"])
def test_conform_a_non_object(obj: object) -> None:
    got = conform(obj, OBSERVED)
    assert got.value == {}
    assert [p.field for p in got.problems] == ["(the object)"]


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(3.0, "3", id="integral-double"),
        pytest.param(0.5, "0.5", id="double"),
        pytest.param(1e300, "1e+300", id="huge-double"),
        pytest.param(None, "null", id="null"),
        pytest.param(False, "false", id="bool"),
        pytest.param("Ready", "'Ready'", id="string"),
        pytest.param("x" * 41, "a string of 41 characters", id="long-string"),
        pytest.param({}, "an object", id="object"),
        pytest.param([], "a list", id="list"),
    ],
)
def test_show(value: object, want: str) -> None:
    assert show(value) == want


_json = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["status", "spec", "conditions", "type", "replicas", "metadata", "labels", "x"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=20,
)


@given(_json)
def test_conformed_objects_fit_their_shape(obj: object) -> None:
    once = conform(obj, OBSERVED)
    # What conform returns fits: conforming it again changes nothing and finds nothing.
    again = conform(once.value, OBSERVED)
    assert again.value == once.value
    assert again.problems == ()
