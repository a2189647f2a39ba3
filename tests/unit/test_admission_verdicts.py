"""Admission remembers CEL verdicts by what of ``self`` a rule reads: never a verdict for another value."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from modelplane import kinds
from modelplane.admission import cel
from modelplane.admission.catalog import xr_validator
from modelplane.admission.cel import Reads, Rule, _evaluate, _evaluate_now, iter_rules, reads
from modelplane.admission.xrd import definitions
from modelplane.documents import read_all
from modelplane.preview.admit import admit
from modelplane.preview.manifests import Loaded, key_of
from modelplane.repo import ROOT

WHOLE = Reads(whole=True)
PRESENT = Reads()


@pytest.mark.parametrize(
    ("rule", "want"),
    [
        pytest.param("has(self.a) == has(self.b)", Reads(fields={"a": PRESENT, "b": PRESENT}), id="presence"),
        pytest.param("!has(self.a) || self.a > 1", Reads(fields={"a": WHOLE}), id="presence-then-value"),
        pytest.param("self.x.y > 0", Reads(fields={"x": Reads(fields={"y": WHOLE})}), id="nested-field"),
        pytest.param("has(self.a.b)", Reads(fields={"a": Reads(fields={"b": PRESENT})}), id="presence-nested"),
        pytest.param("size(self.a) > 0", Reads(fields={"a": Reads(size=True)}), id="size"),
        pytest.param("self.a.size() > 0", Reads(fields={"a": Reads(size=True)}), id="size-method"),
        pytest.param("size(self.a + self.b) > 0", Reads(fields={"a": WHOLE, "b": WHOLE}), id="size-of-an-expression"),
        pytest.param("self.kind == 'self.x'", Reads(fields={"kind": WHOLE}), id="self-in-a-string"),
        pytest.param("1 == 1", Reads(), id="reads-nothing"),
        pytest.param("size(self) > 0", Reads(size=True), id="size-of-self"),
        pytest.param(
            "self.all(a, self.exists_one(b, b.name == a.name))",
            Reads(each=Reads(fields={"name": WHOLE})),
            id="macros-on-self",
        ),
        pytest.param(
            "self.a.all(x, !has(x.b) || x.b.all(y, y.c > 0))",
            Reads(fields={"a": Reads(each=Reads(fields={"b": Reads(each=Reads(fields={"c": WHOLE}))}))}),
            id="nested-macros",
        ),
        pytest.param("self.a.exists(i, i > 1)", Reads(fields={"a": Reads(each=WHOLE)}), id="each-item-whole"),
        pytest.param(
            "self.a.map(i, i.n).size() > 0",
            Reads(fields={"a": Reads(each=Reads(fields={"n": WHOLE}))}),
            id="size-of-a-macro-result",
        ),
        pytest.param("[1].all(self, self > 0) && self.x", Reads(fields={"x": WHOLE}), id="variable-shadows-self"),
        pytest.param(
            "self.a.all(x, self.b.exists(x, x == 1))",
            Reads(fields={"a": Reads(each=PRESENT), "b": Reads(each=WHOLE)}),
            id="inner-variable-shadows",
        ),
        pytest.param("x.has(self.a)", Reads(fields={"a": WHOLE}), id="method-named-has"),
        pytest.param("self.name.matches('^a')", Reads(fields={"name": WHOLE}), id="method-on-a-field"),
        pytest.param("self['a'] > 0", WHOLE, id="index"),
        pytest.param("self == self", WHOLE, id="compared-whole"),
        pytest.param("self.a.reduce(r, i, 0, r + i) > 0", None, id="reduce-not-modelled"),
        pytest.param(".self.a > 0", None, id="root-name"),
        pytest.param("self.?a.orValue(1) > 0", None, id="does-not-parse"),
    ],
)
def test_reads(rule: str, want: Reads | None) -> None:
    assert reads(rule) == want


NODE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "integer"},
        "name": {"type": "string"},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"n": {"type": "integer"}, "tag": {"type": "string"}}},
        },
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def _items(*ns: int, tag: str = "t") -> list[dict[str, Any]]:
    return [{"n": n, "tag": tag} for n in ns]


@pytest.mark.parametrize(
    ("rule", "values", "want"),
    [
        # Objects alike in what is read get the verdict of the first; each is still right.
        pytest.param("self.a > 1", [{"a": 2, "name": "x"}, {"a": 2, "name": "y"}], [True, True], id="alike"),
        pytest.param("self.a > 1", [{"a": 2, "name": "x"}, {"a": 1, "name": "x"}], [True, False], id="field-differs"),
        pytest.param("has(self.b)", [{"a": 1}, {"a": 1, "b": 1}], [False, True], id="presence-differs"),
        pytest.param("size(self) == 1", [{"a": 1}, {"a": 1, "name": "x"}], [True, False], id="size-of-self"),
        pytest.param("has(self.b)", [{"b": 1}, {"b": 2}, {}], [True, True, False], id="presence-only"),
        pytest.param(
            "size(self.name) == 1", [{"name": "x"}, {"name": "y"}, {"name": "xy"}], [True, True, False], id="size-only"
        ),
        pytest.param("has(self.b) && self.b > 1", [{"b": 2}, {"b": 1}], [True, False], id="presence-and-value"),
        pytest.param(
            "self.items.all(i, i.n > 0)",
            [{"items": _items(1, 2)}, {"items": _items(1, 2, tag="u")}, {"items": _items(1, 0, tag="u")}],
            [True, True, False],
            id="item-field-differs",
        ),
        pytest.param(
            "self.items.exists_one(i, i.n == 1)",
            [{"items": _items(1, 2)}, {"items": _items(1, 2, 1)}, {"items": _items(1)}],
            [True, False, True],
            id="item-count-differs",
        ),
        pytest.param(
            "self.items.map(i, i.n) == [1, 2]",
            [{"items": _items(1, 2)}, {"items": _items(2, 1)}],
            [True, False],
            id="item-order-differs",
        ),
        pytest.param(
            "self.labels.map(k, k) == ['a', 'b']",
            [{"labels": {"a": "x", "b": "y"}}, {"labels": {"b": "y", "a": "x"}}, {"labels": {"a": "z", "b": "z"}}],
            [True, False, True],
            id="map-key-order-differs",
        ),
        pytest.param(
            "self.items.all(i, !has(i.tag) || i.tag != 'bad')",
            [{"items": _items(1)}, {"items": [{"n": 1}]}, {"items": _items(1, tag="bad")}],
            [True, True, False],
            id="item-presence-then-value",
        ),
        # As cel-python 0.5.0 compares them: a JSON 1, 1.0 and true each keep their own verdict.
        pytest.param("self.a == 1", [{"a": 1}, {"a": 1.0}, {"a": True}], [True, False, True], id="int-double-bool"),
        pytest.param(
            "self.labels.all(k, k != 'True')",
            [{"labels": {True: "x"}}, {"labels": {"true": "x"}}],
            [False, True],
            id="map-key-not-a-string",
        ),
    ],
)
def test_remembered_verdicts_follow_the_value(rule: str, values: list[dict[str, Any]], want: list[bool]) -> None:
    checked = Rule(kind="Test", path="spec", rule=rule, message="m", field_path="")
    got = [_evaluate(checked, v, NODE) for v in values]
    assert [g[0] for g in got] == want
    assert got == [_evaluate_now(checked, v, NODE) for v in values]


def test_an_error_is_worded_for_its_own_value() -> None:
    # ``self.items.n`` selects on a list: the error quotes the list, which the rule never reads item by item.
    checked = Rule(kind="Test", path="spec", rule="self.items.n > 0", message="m", field_path="")
    values = [{"items": _items(1)}, {"items": _items(7)}]
    got = [_evaluate(checked, v, NODE) for v in values]
    assert [g[1] is not None for g in got] == [True, True]
    assert got == [_evaluate_now(checked, v, NODE) for v in values]
    assert got[0] != got[1]


def _bump(value: Any) -> Any:
    """Every integer one more and every list reversed: values the verdicts must follow."""
    if isinstance(value, dict):
        return {k: _bump(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bump(v) for v in reversed(value)]
    if isinstance(value, int) and not isinstance(value, bool):
        return value + 1
    return value


def _drop_firsts(value: Any) -> Any:
    """The first field of every map below the top dropped, the first item of every list of two or more."""
    if isinstance(value, dict):
        return {k: _drop_firsts(v) for i, (k, v) in enumerate(value.items()) if i > 0 or k in {"spec", "metadata"}}
    if isinstance(value, list):
        return [_drop_firsts(v) for v in (value[1:] if len(value) > 1 else value)]
    return value


def _examples() -> list[Any]:
    return [
        pytest.param(path, id=str(path.relative_to(ROOT / "examples")))
        for path in sorted((ROOT / "examples").rglob("*.yaml"))
        if any(d.get("apiVersion") == kinds.API_VERSION for d in read_all(path) if isinstance(d, dict))
    ]


@pytest.mark.parametrize("edit", [lambda v: v, _bump, _drop_firsts], ids=["as-is", "bumped", "firsts-dropped"])
@pytest.mark.parametrize("path", _examples())
def test_remembered_verdicts_match_evaluation_on_the_examples(
    path: Path, edit: Callable[[Any], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every rule of our XRDs on every example (and edited copies): remembered verdicts as evaluated afresh."""
    for doc in read_all(path):
        if not isinstance(doc, dict) or doc.get("apiVersion") != kinds.API_VERSION or doc["kind"] not in definitions():
            continue
        validator = xr_validator(doc["kind"])
        manifest = edit(copy.deepcopy(doc))
        remembered = validator.validate(manifest)
        with monkeypatch.context() as m:
            m.setattr(cel, "_evaluate", _evaluate_now)
            fresh = validator.validate(manifest)
        assert remembered == fresh


def _service(name: str, tiers: list[int]) -> dict[str, Any]:
    endpoints = [{"selector": {"matchLabels": {"app": f"{name}-{t}"}}, "tier": t} for t in tiers]
    return {
        "apiVersion": kinds.API_VERSION,
        "kind": "ModelService",
        "metadata": {"name": name, "namespace": "ml-team"},
        "spec": {"endpoints": endpoints, "gatewayRef": {"name": "default"}},
    }


def test_refusals_sharing_a_verdict_name_their_own_file_and_field() -> None:
    services = (_service("a", [0, 2]), _service("b", [0, 2]), _service("c", [0, 1]))
    sources = {key_of(s): f"{s['metadata']['name']}.yaml" for s in services}
    (tiers,) = [
        r for r in iter_rules("ModelService", definitions()["ModelService"].crd_schema) if "e.tier - 1" in r.rule
    ]
    admission = admit(Loaded(services, (), sources))
    assert [(r.source, r.refusal.message) for r in admission.refused] == [
        (
            f"{name}.yaml",
            f'error when creating "{name}.yaml": The ModelService "{name}" is invalid: '
            f'spec.endpoints: Invalid value: "array": {tiers.message}',
        )
        for name in ("a", "b")
    ]
