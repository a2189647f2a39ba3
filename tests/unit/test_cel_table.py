"""modelplane.cel gives Kubernetes' answer on every case of the parity table (no Go needed)."""

from __future__ import annotations

import pytest

from modelplane.cel import CELCompileError, CELEvaluationError, compile_selector
from tests.celparity import table

CASES = table.load()


def answer(case: table.Case) -> tuple[str, str]:
    try:
        selector = compile_selector(case.expression)
    except CELCompileError as e:
        return "compile-error", e.reason
    try:
        matched = selector.matches(table.to_device(case.device))
    except CELEvaluationError as e:
        return "runtime-error", e.reason
    return ("match" if matched else "nomatch"), ""


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_same_answer_as_kubernetes(case: table.Case) -> None:
    result, reason = answer(case)
    assert result == case.want, reason
