"""Serving replicas that give way to a higher priority: leaving, replaced surge-first, retired within maxUnavailable.

A FleetQuota with ``preemption: LowerPriority`` lists them in ``status.preempted`` (a higher priority's
serving replicas take the limit), or their cluster in ``status.capacity.preempted`` (a higher priority's
new replica waits for their GPUs). Either way the victim's own deployment moves them like replicas
leaving a draining cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from modelplane.scheduling import Existing, Strategy
from modelplane.scheduling.quotas import Quotas
from modelplane_models.model_replica import ModelReplica
from tests.unit.fleet import deployment, plan
from tests.unit.scheduling.test_quotas import CLASSES, EAST, ON_HOPPER, _occ, _published, _quota, _running

H200_8 = {"className": "h200", "accelerators": 8}
NO_H100 = {"className": "h100", "accelerators": 0}


@dataclass(frozen=True)
class QuotaCase:
    id: str
    limits: Sequence[Mapping[str, Any]]
    own: Sequence[ModelReplica]
    replicas: int = 1
    max_unavailable: int = 0
    retired: tuple[str, ...] = ()
    leaving: tuple[str, ...] = ()
    new: tuple[str, ...] = ()  # replicas placed by this call, by name
    unplaced: str = ""  # the first unplaced replica's reason
    states: Mapping[str, str] = field(default_factory=dict)


PROD = [_running("other-0", "h200", priority=("prod", 100))]  # serves in the place of team-a's batch replica
VICTIM = _running("llm-0", "h200", deployment_name="llm", priority=("batch", 10))
VICTIM_1 = _running("llm-1", "h200", deployment_name="llm", priority=("batch", 10))
SURGED = _running("llm-1", "h100", deployment_name="llm", priority=("batch", 10))
SURGING = _running("llm-1", "h100", deployment_name="llm", priority=("batch", 10), ready=False)

QUOTA_CASES = [
    QuotaCase(
        "room-elsewhere-surges-first",
        [H200_8],
        [VICTIM],
        leaving=("llm-0",),
        new=("llm-1",),
        states={"llm-0": "Leaving", "llm-1": "Surge"},
    ),
    QuotaCase("surge-not-ready-yet-keeps-the-victim", [H200_8], [VICTIM, SURGING], leaving=("llm-0",)),
    QuotaCase("surge-serves-victim-retired", [H200_8], [VICTIM, SURGED], retired=("llm-0",)),
    QuotaCase(
        "no-room-max-unavailable-0-one-at-a-time",
        [{"className": "h200", "accelerators": 0}, NO_H100],
        [VICTIM, VICTIM_1],
        replicas=2,
        retired=("llm-0",),
        leaving=("llm-1",),
        unplaced="QuotaExceeded",
    ),
    QuotaCase(
        "no-room-within-max-unavailable",
        [{"className": "h200", "accelerators": 0}, NO_H100],
        [VICTIM, VICTIM_1],
        replicas=2,
        max_unavailable=2,
        retired=("llm-0", "llm-1"),
        unplaced="QuotaExceeded",
    ),
    QuotaCase(
        "no-room-max-unavailable-1-of-2",
        [{"className": "h200", "accelerators": 0}, NO_H100],
        [VICTIM, VICTIM_1],
        replicas=2,
        max_unavailable=1,
        retired=("llm-0",),
        leaving=("llm-1",),
        unplaced="QuotaExceeded",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in QUOTA_CASES])
def test_a_replica_a_quota_preempts_is_moved_within_its_rollout_budget(case: QuotaCase) -> None:
    quota = _quota(limits=case.limits, preemption="LowerPriority")
    published = _published(quota, [*PROD, *case.own])
    assert published.preempted  # the quota's function found them beyond the limit the higher priority serves in
    dep = deployment("llm", replicas=case.replicas, shape=ON_HOPPER)
    strategy = Strategy(max_surge=1, max_unavailable=case.max_unavailable)
    got = plan(
        dep,
        [EAST],
        CLASSES,
        [*PROD, *case.own],
        existing=Existing(replicas={i: _occ(r) for i, r in enumerate(case.own)}, strategy=strategy),
        quotas=Quotas((published,), priority=10),
    )
    assert got.retired == case.retired
    assert got.preempted == case.retired
    assert got.leaving == case.leaving
    assert tuple(p.replica for p in got.placements if p.origin == "New") == case.new
    assert (got.unplaced[0].reason if got.unplaced else "") == case.unplaced
    for name, state in case.states.items():
        assert {p.replica: p.state for p in got.placements}[name] == state
    held = [p.held.message for p in got.placements if p.held is not None and p.replica in case.leaving]
    assert all("FleetQuota team-a (preemption LowerPriority) gives its accelerators" in m for m in held)
