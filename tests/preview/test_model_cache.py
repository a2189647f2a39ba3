"""The preview shows each ModelCache's copy per cluster and the replicas waiting for one (CacheNotReady)."""

from __future__ import annotations

import pytest

from modelplane.preview import command
from tests.golden.cases import observed_examples
from tests.preview.test_explain import check_golden
from tests.preview.test_width import tables

EXAMPLES = observed_examples()
FLEET = [str(EXAMPLES / "platform"), str(EXAMPLES / "model-cache")]


def _caches(out: str) -> list[str]:
    return [row for title, _, rows in tables(out) if title.startswith("Model caches") for row in rows]


def test_golden_caches_per_cluster_and_the_replicas_waiting(capsys: pytest.CaptureFixture[str]) -> None:
    command.main(["--width", "160", "--assume-ready", *FLEET])
    out = capsys.readouterr().out
    rows = _caches(out)
    # As observed (tests/golden/observed.yaml): the copy on us-east-kai is Ready, nobody waits there;
    # the one on eu-west-kueue still downloads, and the replica placed there waits for it.
    us_east = next(r for r in rows if "ml-team/llama-70b " in r and "us-east-kai" in r)
    eu_west = next(r for r in rows if "ml-team/llama-70b " in r and "eu-west-kueue" in r)
    assert " Ready " in us_east
    assert " - " in us_east
    assert "Hydrating" in eu_west
    assert "ml-team/llama-70b-cached-demo-1" in eu_west
    assert any("ml-team/llama-8b" in r and "us-east-kai" in r for r in rows)
    check_golden("preview-model-cache.txt", out.replace(f"{EXAMPLES}/", "examples/"))


def test_no_cache_no_table(capsys: pytest.CaptureFixture[str]) -> None:
    command.main(["--width", "160", "--assume-ready", str(EXAMPLES / "platform"), str(EXAMPLES / "models")])
    assert _caches(capsys.readouterr().out) == []
