"""decide: the part of the winning score that beat the runner-up, said with the figures."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from modelplane.repo import ROOT
from modelplane.scheduling.decision import DecidedBy, Decision, Score, decide


def _score(cluster: str, spread: int = 0, stranded: int = 0, left: int = 0) -> Score:
    return Score(spread, stranded, left, cluster, ("gpu",))


@pytest.mark.parametrize(
    ("winner", "runner_up", "want"),
    [
        pytest.param(
            _score("a", left=12),
            None,
            Decision(DecidedBy.ONLY_CANDIDATE, "only candidate: no other cluster can take it now"),
            id="only-candidate",
        ),
        pytest.param(
            _score("us-east", spread=0, stranded=4, left=20),
            _score("us-west", spread=1, stranded=0, left=0),
            Decision(DecidedBy.SPREAD, "spread: 0 replicas here vs 1 on us-west (runner-up)"),
            id="spread-beats-a-better-fit",
        ),
        pytest.param(
            _score("b", spread=1),
            _score("a", spread=2),
            Decision(DecidedBy.SPREAD, "spread: 1 replica here vs 2 on a (runner-up)"),
            id="spread-one-replica",
        ),
        pytest.param(
            _score("us-west", spread=1, stranded=0, left=12),
            _score("eu-west", spread=1, stranded=4, left=4),
            Decision(DecidedBy.BEST_FIT, "best fit: strands 0 GPUs, leaves 12 free vs 4 stranded on eu-west"),
            id="best-fit-fewer-stranded",
        ),
        pytest.param(
            _score("b", stranded=1, left=7),
            _score("a", stranded=3, left=5),
            Decision(DecidedBy.BEST_FIT, "best fit: strands 1 GPU, leaves 7 free vs 3 stranded on a"),
            id="best-fit-one-gpu-stranded",
        ),
        pytest.param(
            _score("b", stranded=0, left=0),
            _score("a", stranded=0, left=8),
            Decision(DecidedBy.BEST_FIT, "best fit: strands 0 GPUs, leaves 0 free vs 8 free on a"),
            id="best-fit-fewer-left",
        ),
        pytest.param(
            _score("aks", spread=0, stranded=7, left=15),
            _score("eks", spread=0, stranded=7, left=15),
            Decision(DecidedBy.TIE_BREAK, "tie-break: equal score with eks, first by name"),
            id="tie-break",
        ),
    ],
)
def test_decide(winner: Score, runner_up: Score | None, want: Decision) -> None:
    assert decide(winner, runner_up) == want


def test_the_message_of_the_longest_cluster_name_fits_the_status_field() -> None:
    longest = "c" * 253  # a Kubernetes object name's longest
    worst = decide(_score("a", stranded=10**6, left=10**6), _score(longest, stranded=10**7, left=10**7))
    assert longest in worst.message
    assert len(worst.message) <= _why_max_length()


def _placement_schema() -> dict[str, Any]:
    xrd = yaml.safe_load((ROOT / "apis" / "modeldeployments" / "definition.yaml").read_text())
    status = xrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    placement: dict[str, Any] = status["properties"]["placements"]["items"]["properties"]
    return placement


def _why_max_length() -> int:
    return int(_placement_schema()["why"]["maxLength"])


def test_the_xrd_enumerates_every_decision() -> None:
    assert _placement_schema()["decidedBy"]["enum"] == [str(d) for d in DecidedBy]
