"""A deployment's ModelCache in placement: clusters with a Ready copy rank first, after cost, before spread."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from modelplane.scheduling import DecidedBy, schedule
from modelplane_models.inference_cluster import InferenceCluster
from tests.unit.fleet import Pool, Shape, cluster, deployment, gpu_class, view

CLASSES = [gpu_class("h100", per_node=8)]
TP4 = Shape(tensor=4)


@dataclass(frozen=True)
class Case:
    replicas: int
    clusters: list[InferenceCluster]
    cached: frozenset[str] | None
    want: dict[str, tuple[str, DecidedBy, str]]  # replica -> cluster, decidedBy, why


def _two(nodes_a: int = 1, nodes_b: int = 1) -> list[InferenceCluster]:
    return [cluster("a", Pool("gpu", "h100", nodes_a)), cluster("b", Pool("gpu", "h100", nodes_b))]


CASES = [
    pytest.param(
        Case(1, _two(), None, {"llm-0": ("a", DecidedBy.TIE_BREAK, "tie-break: equal score with b, first by name")}),
        id="no-cache-referenced-as-before",
    ),
    pytest.param(
        Case(
            1,
            _two(),
            frozenset(),
            {"llm-0": ("a", DecidedBy.TIE_BREAK, "tie-break: equal score with b, first by name")},
        ),
        id="no-copy-ready-anywhere-as-before",
    ),
    pytest.param(
        Case(
            1,
            _two(),
            frozenset({"b"}),
            {"llm-0": ("b", DecidedBy.CACHE, "cache: the model's copy is Ready here, not on a (runner-up)")},
        ),
        id="ready-copy-beats-the-first-name",
    ),
    pytest.param(
        Case(
            2,
            _two(),
            frozenset({"b"}),
            {
                "llm-0": ("b", DecidedBy.CACHE, "cache: the model's copy is Ready here, not on a (runner-up)"),
                "llm-1": ("b", DecidedBy.CACHE, "cache: the model's copy is Ready here, not on a (runner-up)"),
            },
        ),
        id="ready-copy-beats-spread",
    ),
    pytest.param(
        Case(
            3,
            _two(),
            frozenset({"b"}),
            {
                "llm-0": ("b", DecidedBy.CACHE, "cache: the model's copy is Ready here, not on a (runner-up)"),
                "llm-1": ("b", DecidedBy.CACHE, "cache: the model's copy is Ready here, not on a (runner-up)"),
                "llm-2": ("a", DecidedBy.ONLY_CANDIDATE, "only candidate: no other cluster can take it now"),
            },
        ),
        id="full-cached-cluster-overflows-to-the-others",
    ),
    pytest.param(
        Case(
            1,
            [*_two(), cluster("c", Pool("gpu", "h100", 1))],
            frozenset({"b", "c"}),
            {"llm-0": ("b", DecidedBy.TIE_BREAK, "tie-break: equal score with c, first by name")},
        ),
        id="among-ready-copies-the-usual-score",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_ready_copies_rank_first(case: Case) -> None:
    dep = deployment("llm", replicas=case.replicas, shape=TP4)
    got = schedule(dep, view(case.clusters, CLASSES), cached=case.cached)
    placed = {
        p.replica: (p.cluster, p.decision.decided_by, p.decision.message)
        for p in got.placements
        if p.decision is not None
    }
    assert placed == case.want
