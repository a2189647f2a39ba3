"""The preview lists batch runs per cluster: where each ModelBatchRun landed, its phase and its requests."""

from __future__ import annotations

import json

import pytest

from modelplane.preview import command
from tests.golden.cases import observed_examples
from tests.preview.test_width import tables

EXAMPLES = observed_examples()
FLEET = [str(EXAMPLES / "platform"), str(EXAMPLES / "models"), str(EXAMPLES / "batch")]


def _runs(out: str) -> list[str]:
    return [row for title, _, rows in tables(out) if title.startswith("Batch runs") for row in rows]


def test_runs_per_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["--width", "200", "--assume-ready", *FLEET]) == 0
    rows = _runs(capsys.readouterr().out)
    nightly = next(r for r in rows if "ml-team/nightly-embeddings" in r)
    evals = next(r for r in rows if "ml-team/assistant-evals" in r)
    # The nightly run's worker takes a pool of a production cluster; the evaluation's client goes
    # where the assistant service's Ready endpoints are, and runs once.
    assert "(h100)" in nightly or "(h200)" in nightly
    assert "0 2 * * *" in nightly
    assert " Dedicated " in nightly
    assert " Service " in evals
    assert " once " in evals
    assert all(" Scheduled " in r for r in (nightly, evals))


def test_the_document_carries_the_runs(capsys: pytest.CaptureFixture[str]) -> None:
    command.main(["--assume-ready", "-o", "json", *FLEET])
    doc = json.loads(capsys.readouterr().out)
    runs = {r["run"]: r for r in doc["fleet"]["batches"]}
    assert set(runs) == {"ml-team/nightly-embeddings", "ml-team/assistant-evals"}
    assert all(r["cluster"] for r in runs.values())
    assert runs["ml-team/nightly-embeddings"]["schedule"] == "0 2 * * *"


def test_no_run_no_table(capsys: pytest.CaptureFixture[str]) -> None:
    command.main(["--width", "160", "--assume-ready", str(EXAMPLES / "platform"), str(EXAMPLES / "models")])
    assert _runs(capsys.readouterr().out) == []
