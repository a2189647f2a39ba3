"""``explain`` ranks by a deployment's ModelCache exactly as ``schedule`` does, and says what each replica does with it.

The cache is given to ``explain`` as read (``copy_of``) and to ``schedule`` as compose-model-deployment
gives it (its Ready copies, ``ready_clusters``): both must place alike and record the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from modelplane.modelcache.use import CacheCopy, copy_of
from modelplane.scheduling import schedule
from modelplane.scheduling.explain import NO_COPY, CacheRank, explain
from modelplane_models.inference_cluster import InferenceCluster
from tests.unit.fleet import Pool, Shape, cluster, deployment, gpu_class, view

CLASSES = [gpu_class("h100", per_node=8)]
TP4, TP8 = Shape(tensor=4), Shape(tensor=8)
CLAIM = "model-cache-llm"


def _two() -> list[InferenceCluster]:
    return [cluster("a", Pool("gpu", "h100", 1)), cluster("b", Pool("gpu", "h100", 1))]


def _cache(**phases: str) -> CacheCopy:
    """A ModelCache ``llm`` read as the function reads it: its status, one entry per cluster."""
    clusters = [{"name": c, "phase": p, "message": f"{p.lower()} here"} for c, p in phases.items()]
    return copy_of({"status": {"claimName": CLAIM, "clusters": clusters}})


@dataclass(frozen=True)
class Case:
    policy: str | None  # spec.modelCacheRef.policy; None: no modelCacheRef at all
    cache: CacheCopy | None  # as read; None: not found
    replicas: int = 1
    shape: Shape = TP4  # TP8 fills a cluster's one node: the next replica overflows
    clusters: list[InferenceCluster] = field(default_factory=_two)
    chosen: dict[str, tuple[str, str]] = field(default_factory=dict)  # replica -> cluster, decidedBy
    copies: dict[str, str] = field(default_factory=dict)  # cluster -> the cache cell ("" without a cache)
    waits: dict[str, str] = field(default_factory=dict)  # replica -> a phrase of why it waits
    unmounted: dict[str, str] = field(default_factory=dict)  # replica -> a phrase of why it starts without
    rank: CacheRank | None = None


CASES = [
    pytest.param(
        Case(None, _cache(b="Ready"), chosen={"llm-0": ("a", "TieBreak")}, copies={"a": "", "b": ""}),
        id="no-cache-referenced-ignores-a-cache-given",
    ),
    pytest.param(
        Case(
            "Required",
            _cache(a="Hydrating", b="Ready"),
            chosen={"llm-0": ("b", "Cache")},
            copies={"a": "Hydrating", "b": "Ready"},
            rank=CacheRank("llm", "Required", found=True, ready=("b",)),
        ),
        id="required-ready-copy-wins-and-mounts",
    ),
    pytest.param(
        Case(
            "Required",
            _cache(a="Hydrating", b="Ready"),
            replicas=2,
            shape=TP8,
            chosen={"llm-0": ("b", "Cache"), "llm-1": ("a", "OnlyCandidate")},
            copies={"a": "Hydrating", "b": "Ready"},
            # Not ineligible: placed there, so the copy is staged, and waits for it.
            waits={"llm-1": "ModelCache llm's copy on a is Hydrating: hydrating here"},
            rank=CacheRank("llm", "Required", found=True, ready=("b",)),
        ),
        id="required-overflow-waits-where-the-copy-hydrates",
    ),
    pytest.param(
        Case(
            "Required",
            _cache(b="Failed"),
            chosen={"llm-0": ("a", "TieBreak")},
            copies={"a": NO_COPY, "b": "Failed"},
            waits={"llm-0": "ModelCache llm's copy on a is Pending"},
            rank=CacheRank("llm", "Required", found=True, ready=()),
        ),
        id="required-no-copy-ready-anywhere-usual-score",
    ),
    pytest.param(
        Case(
            "Required",
            None,
            chosen={"llm-0": ("a", "TieBreak")},
            copies={"a": NO_COPY, "b": NO_COPY},
            waits={"llm-0": "ModelCache llm not found"},
            rank=CacheRank("llm", "Required", found=False, ready=()),
        ),
        id="required-cache-not-found",
    ),
    pytest.param(
        Case(
            "Preferred",
            _cache(a="Pending", b="Ready"),
            replicas=2,
            shape=TP8,
            chosen={"llm-0": ("b", "Cache"), "llm-1": ("a", "OnlyCandidate")},
            copies={"a": "Pending", "b": "Ready"},
            unmounted={"llm-1": "starting without it (policy Preferred)"},
            rank=CacheRank("llm", "Preferred", found=True, ready=("b",)),
        ),
        id="preferred-ready-copy-wins-the-other-starts-without",
    ),
    pytest.param(
        Case(
            "Preferred",
            _cache(a="Ready", b="Ready"),
            replicas=2,
            clusters=[cluster("a", Pool("gpu", "h100", 2)), cluster("b", Pool("gpu", "h100", 2))],
            chosen={"llm-0": ("a", "TieBreak"), "llm-1": ("b", "Spread")},
            copies={"a": "Ready", "b": "Ready"},
            rank=CacheRank("llm", "Preferred", found=True, ready=("a", "b")),
        ),
        id="preferred-ready-everywhere-the-usual-score",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_explain_ranks_by_the_cache_as_the_scheduler(case: Case) -> None:
    ref = {"name": "llm", "policy": case.policy} if case.policy else None
    dep = deployment("llm", replicas=case.replicas, shape=case.shape, cache=ref)
    fleet = view(case.clusters, CLASSES)
    # What compose-model-deployment gives the scheduler: the Ready copies (none when not found), or no cache.
    cached = None if ref is None else (case.cache.ready if case.cache is not None else frozenset())
    scheduled = schedule(dep, fleet, cached=cached)
    recorded = {
        p.replica: (p.cluster, str(p.decision.decided_by), p.decision.message)
        for p in scheduled.placements
        if p.decision is not None
    }
    got = explain(dep, view(case.clusters, CLASSES), cache=case.cache)
    said = {s.replica: (s.chosen, s.decided_by, s.why) for s in got.steps if s.chosen}
    assert said == recorded
    assert {r: (c, by) for r, (c, by, _) in said.items()} == case.chosen
    assert {c.cluster: c.cache for c in got.clusters} == case.copies
    assert all(c.verdict == "eligible" for c in got.clusters)  # neither policy refuses a cluster
    assert got.cache == case.rank
    for step in got.steps:
        assert (case.waits.get(step.replica, "") in step.waits) and bool(step.waits) == (step.replica in case.waits)
        assert (case.unmounted.get(step.replica, "") in step.unmounted) and bool(step.unmounted) == (
            step.replica in case.unmounted
        )
