"""Admission remembers CEL verdicts by what of ``self`` a rule reads: never a verdict for another value."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.admission.cel import Rule, _evaluate, field_uses


@pytest.mark.parametrize(
    ("rule", "fields"),
    [
        pytest.param("has(self.a) == has(self.b)", {"a", "b"}, id="fields"),
        pytest.param("self.x.y > 0", {"x"}, id="nested-field"),
        pytest.param("self.a.exists(i, i > 1)", {"a"}, id="macro-on-a-field"),
        pytest.param("self.kind == 'self'", {"kind"}, id="self-in-a-string"),
        pytest.param("1 == 1", set(), id="reads-nothing"),
        pytest.param("size(self) > 0", None, id="self-whole"),
        pytest.param("self.all(k, k != '')", None, id="macro-on-self"),
        pytest.param("self.?a.orValue(1) > 0", None, id="optional-field"),
        pytest.param("self['a'] > 0", None, id="index"),
        pytest.param("self == self", None, id="compared-whole"),
    ],
)
def test_fields_read(rule: str, fields: set[str] | None) -> None:
    got = field_uses(rule)
    assert (None if got is None else set(got)) == fields


@pytest.mark.parametrize(
    ("rule", "uses"),
    [
        pytest.param("has(self.a) == has(self.b)", {"a": 0, "b": 0}, id="presence"),
        pytest.param("!has(self.a) || self.a > 1", {"a": 2}, id="presence-then-value"),
        pytest.param("size(self.a) > 0", {"a": 1}, id="size"),
        pytest.param("has(self.a.b)", {"a": 2}, id="presence-of-a-nested-field"),
        pytest.param("size(self.a) > 0 && self.a[0] == 1", {"a": 2}, id="size-then-value"),
        pytest.param("x.has(self.a)", {"a": 2}, id="method-named-has"),
        pytest.param("size(self.a + self.b) > 0", {"a": 2, "b": 2}, id="size-of-an-expression"),
    ],
)
def test_field_uses(rule: str, uses: dict[str, int]) -> None:
    assert field_uses(rule) == uses


NODE: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "name": {"type": "string"}},
}


@pytest.mark.parametrize(
    ("rule", "values", "want"),
    [
        # Objects alike in the fields read get the verdict of the first; each is still right.
        pytest.param("self.a > 1", [{"a": 2, "name": "x"}, {"a": 2, "name": "y"}], [True, True], id="alike"),
        pytest.param("self.a > 1", [{"a": 2, "name": "x"}, {"a": 1, "name": "x"}], [True, False], id="field-differs"),
        pytest.param("has(self.b)", [{"a": 1}, {"a": 1, "b": 1}], [False, True], id="presence-differs"),
        pytest.param("size(self) == 1", [{"a": 1}, {"a": 1, "name": "x"}], [True, False], id="whole-value"),
        pytest.param("has(self.b)", [{"b": 1}, {"b": 2}, {}], [True, True, False], id="presence-only"),
        pytest.param(
            "size(self.name) == 1", [{"name": "x"}, {"name": "y"}, {"name": "xy"}], [True, True, False], id="size-only"
        ),
        pytest.param("has(self.b) && self.b > 1", [{"b": 2}, {"b": 1}], [True, False], id="presence-and-value"),
    ],
)
def test_remembered_verdicts_follow_the_value(rule: str, values: list[dict[str, Any]], want: list[bool]) -> None:
    checked = Rule(kind="Test", path="spec", rule=rule, message="m", field_path="")
    assert [_evaluate(checked, v, NODE)[0] for v in values] == want
