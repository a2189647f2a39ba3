"""Admission cases per kind: each manifest is accepted or refused with the expected message.

``cel_cases/<plural>.yaml`` is a list of ``{name, valid, message, manifest, old}``;
``message`` (only for ``valid: false``) is a substring of an expected error; ``old``
(optional) makes the case an update of that object, for the transition rules.
Every CEL rule of every XRD must be accepted by at least one valid case that
evaluates it and refused by at least one invalid case that expects its message.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import xrds

from modelplane import kinds


def _case_files() -> list[Path]:
    return sorted(xrds.CEL_CASES_DIR.glob("*.yaml"))


@functools.cache
def _cases(plural: str) -> tuple[dict[str, Any], ...]:
    path = xrds.CEL_CASES_DIR / f"{plural}.yaml"
    if not path.is_file():
        return ()
    cases = xrds.load_document(path)
    if not isinstance(cases, list):
        msg = f"{path}: want a YAML list of cases"
        raise TypeError(msg)
    return tuple(cases)


@functools.cache
def _result(plural: str, name: str) -> xrds.Result:
    (case,) = [c for c in _cases(plural) if c["name"] == name]
    return xrds.validate(case["manifest"], case.get("old"))


_CASES = [
    pytest.param(path.stem, case, id=f"{path.stem}/{case.get('name')}")
    for path in _case_files()
    for case in _cases(path.stem)
]
_RULES = [pytest.param(r, id=f"{r.kind}:{r.path}:{i}") for i, r in enumerate(xrds.rules())]
_DEFINITIONS = [pytest.param(d, id=d.kind) for d in xrds.definitions().values()]


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in _case_files()])
def test_case_file_is_well_formed(path: Path) -> None:
    assert path.stem in {k.plural for k in kinds.KINDS}, f"{path.name} is not named after a kind's plural"
    cases = _cases(path.stem)
    names = [c.get("name") for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    for case in cases:
        assert set(case) <= {"name", "valid", "message", "manifest", "old"}, case.get("name")
        assert isinstance(case["name"], str)
        assert isinstance(case["valid"], bool)
        assert isinstance(case["manifest"], dict)
        assert ("message" in case) != case["valid"], f"{case['name']}: message is for invalid cases only"


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_every_kind_has_cases(definition: xrds.Definition) -> None:
    plural = kinds.BY_KIND[definition.kind].plural
    assert any(c["valid"] for c in _cases(plural)), f"cel_cases/{plural}.yaml has no valid case"
    assert any(not c["valid"] for c in _cases(plural)), f"cel_cases/{plural}.yaml has no invalid case"


@pytest.mark.parametrize(("plural", "case"), _CASES)
def test_case(plural: str, case: dict[str, Any]) -> None:
    manifest = case["manifest"]
    assert manifest.get("apiVersion") == kinds.API_VERSION
    assert manifest.get("kind") == xrds.kind_for_plural(plural).kind
    result = _result(plural, case["name"])
    if case["valid"]:
        assert result.errors == ()
        assert all(e.error is None for e in result.evaluations), [e.error for e in result.evaluations]
    else:
        assert any(case["message"] in e for e in result.errors), (
            f"want an error containing {case['message']!r}, got {list(result.errors)}"
        )


@pytest.mark.parametrize("rule", _RULES)
def test_rule_is_covered(rule: xrds.Rule) -> None:
    plural = kinds.BY_KIND[rule.kind].plural
    accepted = [
        c["name"]
        for c in _cases(plural)
        if c["valid"] and any(e.rule == rule and e.passed for e in _result(plural, c["name"]).evaluations)
    ]
    refused = [
        c["name"]
        for c in _cases(plural)
        if not c["valid"]
        and c["message"] in rule.message
        and any(e.rule == rule and not e.passed and e.error is None for e in _result(plural, c["name"]).evaluations)
    ]
    assert accepted, f"no valid case in cel_cases/{plural}.yaml evaluates and passes {rule.id}"
    assert refused, f"no invalid case in cel_cases/{plural}.yaml fails {rule.id} expecting {rule.message!r}"
