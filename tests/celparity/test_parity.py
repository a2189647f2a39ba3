"""The parity table is what Kubernetes answers, and the environments declare the same functions.

The Go oracle is built from the module proxy on first use (a few minutes) and cached. Without
Go the tests skip, except in CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from modelplane.cel.decls import TABLE
from tests.celparity import oracle, table

CASES = table.load()


@pytest.fixture(scope="module")
def oracle_binary() -> Path:
    try:
        return oracle.build()
    except oracle.OracleUnavailable as e:
        if os.environ.get("CI"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    except subprocess.CalledProcessError as e:
        pytest.fail(f"building the CEL parity oracle failed:\n{e.stderr}")


@pytest.fixture(scope="module")
def kubernetes_answers(oracle_binary: Path) -> dict[str, dict[str, Any]]:
    return oracle.evaluate(oracle_binary, table.oracle_input(CASES))


def test_table_is_large_and_varied() -> None:
    assert len(CASES) >= 150
    assert {case.want for case in CASES} == set(table.RESULTS)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_kubernetes_gives_the_recorded_answer(case: table.Case, kubernetes_answers: dict[str, dict[str, Any]]) -> None:
    answer = kubernetes_answers[case.id]
    assert answer["result"] == case.want, answer.get("detail", "")


def _outside_modelplane_table(line: str) -> bool:
    # Left out of modelplane's table on purpose (see modelplane.cel.decls): the authorizer library
    # and the legacy spellings of `in` and `@not_strictly_false`.
    name = line.split(" ", 1)[0]
    return "kubernetes.authorization." in line or name in ("in", "_in_", "__not_strictly_false__")


def test_declarations_match_kubernetes(oracle_binary: Path) -> None:
    real = [line for line in oracle.declarations(oracle_binary) if not _outside_modelplane_table(line)]
    ours = TABLE.strip().splitlines()
    assert sorted(ours) == sorted(real)
