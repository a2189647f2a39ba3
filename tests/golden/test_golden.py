"""Every example XR renders exactly as its golden file says (regenerate with `make goldens`)."""

from __future__ import annotations

import pytest

from tests.golden.cases import GOLDEN, Case, cases, render_case

CASES = cases()


def test_there_are_cases() -> None:
    assert CASES, "no Modelplane XR found under examples/"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_render_matches_golden(case: Case) -> None:
    assert case.golden.is_file(), f"{case.golden} is missing: run `make goldens` and review it"
    assert render_case(case) == case.golden.read_text(), f"{case.id} drifted from its golden file: run `make goldens`"


def test_no_stale_goldens() -> None:
    wanted = {c.golden for c in CASES}
    stale = sorted(str(p) for p in GOLDEN.rglob("*.yaml") if p not in wanted)
    assert not stale, f"golden files no example produces (run `make goldens`): {stale}"
