"""Conditions as Crossplane merges them, and the shape of what ``crossplane render`` prints."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.render import RenderOutput, include_full_xr, to_yaml
from modelplane.render.conditions import set_conditions, stable_n_and_some_more
from modelplane.render.model import CONDITION_TIME
from modelplane.render.normalize import normalize
from modelplane.render.output import replace_condition_times

T0, T1 = "2023-01-01T00:00:00Z", "2025-01-01T00:00:00Z"


def _c(type_: str, status: str, reason: str = "R", time: str = T0, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "status": status, "lastTransitionTime": time, "reason": reason, **extra}


@pytest.mark.parametrize(
    ("existing", "new", "want"),
    [
        pytest.param([], [_c("A", "True")], [_c("A", "True")], id="appended"),
        pytest.param([_c("A", "True")], [_c("A", "True", time=T1)], [_c("A", "True")], id="equal-keeps-its-time"),
        pytest.param(
            [_c("A", "True"), _c("B", "True")],
            [_c("A", "False", time=T1)],
            [_c("A", "False", time=T1), _c("B", "True")],
            id="changed-replaced-in-place",
        ),
        pytest.param(
            [_c("A", "True", observedGeneration=1)],
            [_c("A", "True", time=T1, observedGeneration=2)],
            [_c("A", "True", time=T1, observedGeneration=2)],
            id="generation-counts-when-both-have-one",
        ),
        pytest.param(
            [{**_c("A", "True"), "extra": "x", "message": ""}],
            [_c("B", "True")],
            [_c("A", "True"), _c("B", "True")],
            id="read-through-the-typed-struct",
        ),
    ],
)
def test_set_conditions(existing: list[dict[str, Any]], new: list[dict[str, Any]], want: list[Any]) -> None:
    obj: dict[str, Any] = {"status": {"conditions": existing, "phase": "x"}}
    set_conditions(obj, new)
    assert obj == {"status": {"conditions": want, "phase": "x"}}


@pytest.mark.parametrize(
    ("names", "want"),
    [
        pytest.param(["b", "a"], "a, b", id="two"),
        pytest.param(["c", "a", "b"], "a, b, and c", id="three"),
        pytest.param(["e", "d", "c", "b", "a"], "a, b, c, and 2 more", id="five"),
    ],
)
def test_stable_n_and_some_more(names: list[str], want: str) -> None:
    assert stable_n_and_some_more(names) == want


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            {"status": {"conditions": [{"type": "A", "status": "True", "lastTransitionTime": T0, "x": 1}]}},
            {
                "status": {
                    "conditions": [{"type": "A", "status": "True", "lastTransitionTime": CONDITION_TIME, "reason": ""}]
                }
            },
            id="fixed-time-typed",
        ),
        pytest.param({"status": {"phase": "Up"}}, {"status": {"phase": "Up", "conditions": None}}, id="none-is-null"),
        pytest.param({"spec": {}}, {"spec": {}}, id="no-status"),
        pytest.param({"status": "weird"}, {"status": "weird"}, id="status-not-an-object"),
    ],
)
def test_replace_condition_times(obj: dict[str, Any], want: dict[str, Any]) -> None:
    replace_condition_times(obj)
    assert obj == want


def test_include_full_xr_merges_the_rendered_xr_over_the_input() -> None:
    xr = {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"name": "x", "labels": {"a": "b"}},
        "spec": {"size": 1, "list": [1, 2]},
        "status": {"old": True, "conditions": [_c("A", "True")]},
    }
    rendered = {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"name": "x"},
        "spec": {"crossplane": {"resourceRefs": []}, "list": [3]},
        "status": {"conditions": [_c("B", "True")]},
    }
    got = include_full_xr(RenderOutput(xr=rendered, composed=[], results=[], context=None), xr).xr
    assert got == {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"name": "x", "labels": {"a": "b"}},
        "spec": {"size": 1, "list": [3], "crossplane": {"resourceRefs": []}},
        "status": {"old": True, "conditions": [_c("B", "True")]},
    }


@pytest.mark.parametrize(
    ("results", "context", "want"),
    [
        pytest.param(False, False, "---\nkind: X\n---\nkind: A\n---\nkind: B\n", id="resources-only"),
        pytest.param(
            True, True, "---\nkind: X\n---\nkind: A\n---\nkind: B\n---\nkind: Result\n---\nkind: Context\n", id="all"
        ),
    ],
)
def test_to_yaml_orders_documents(results: bool, context: bool, want: str) -> None:
    out = RenderOutput(
        xr={"kind": "X"},
        composed=[{"kind": "A"}, {"kind": "B"}],
        results=[{"kind": "Result"}],
        context={"kind": "Context"},
    )
    assert to_yaml(out, include_function_results=results, include_context=context) == want


def test_to_yaml_without_a_context() -> None:
    out = RenderOutput(xr={"kind": "X"}, composed=[], results=[], context=None)
    assert to_yaml(out, include_function_results=True, include_context=True) == "---\nkind: X\n"


def _result(message: str, reason: str = "ComposeResources") -> str:
    head = "apiVersion: render.crossplane.io/v1beta1\nkind: Result\n"
    return f"{head}message: {message}\nreason: {reason}\nseverity: Normal\n"


_B, _A = _result('Composed resource "b" is not yet ready'), _result('Composed resource "a" is not yet ready')
_MOVED = _result(
    'cannot create composed resource "m" in namespace "o", using XR namespace "t"\n  instead', "NamespaceOverridden"
)
_STEP = _result("'Pipeline step \"s\": done'")


@pytest.mark.parametrize(
    ("stream", "want"),
    [
        pytest.param(
            "---\nkind: X\n---\n" + _B + "---\n" + _A,
            "---\nkind: X\n---\n" + _A + "---\n" + _B,
            id="per-resource-events-sorted",
        ),
        pytest.param(
            "---\n" + _STEP + "---\n" + _MOVED + "---\n" + _B + "---\n" + _A + "---\nkind: Context\n",
            "---\n" + _STEP + "---\n" + _A + "---\n" + _B + "---\n" + _MOVED + "---\nkind: Context\n",
            id="a-step-result-stays-a-folded-message-sorts",
        ),
        pytest.param("---\ndata: |\n  ---\n  x\n", "---\ndata: |\n  ---\n  x\n", id="separator-in-a-block-scalar"),
        pytest.param("", "", id="empty"),
    ],
)
def test_normalize(stream: str, want: str) -> None:
    assert normalize(stream) == want
