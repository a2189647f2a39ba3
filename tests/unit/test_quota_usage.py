"""What a FleetQuota counts: per limit, per class, priority and deployment; who is beyond a limit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from modelplane.capacity import DeploymentKey, Occupancy, RoleOccupancy
from modelplane.quota import Replica, count_use, quota_status
from modelplane.scheduling.quotas import Limit, quota_of
from modelplane.topology import Footprint, Role
from modelplane_models.fleet_quota import FleetQuota

POOLS = {("east", "h100"): "h100", ("east", "h200"): "h200", ("east", "a100"): "a100"}
HOPPER = {"h100", "h200"}


def _covers(limit: Limit, class_name: str) -> bool:
    # A device selector here stands for "the Hopper classes".
    return limit.class_name == class_name if limit.class_name else class_name in HOPPER


def _r(
    name: str,
    pool: str = "h100",
    gpus: int = 8,
    *,
    ready: bool = True,
    priority: int = 0,
    klass: str = "",
    created: str = "",
    namespace: str = "ml",
) -> Replica:
    role = RoleOccupancy(Role.UNIFIED, pool, Footprint(nodes_per_worker=1, gpus_per_node=gpus, workers=1))
    deployment = DeploymentKey(namespace, name.rsplit("-", 1)[0])
    occupancy = Occupancy(namespace, name, deployment, "east", (role,), ready, priority=priority, priority_class=klass)
    return Replica(occupancy, created)


def _pd(name: str, *, ready: bool) -> Replica:
    """A disaggregated replica: prefill on h100, decode on h200, 8 accelerators each."""
    fp = Footprint(nodes_per_worker=1, gpus_per_node=8, workers=1)
    roles = (RoleOccupancy(Role.PREFILL, "h100", fp), RoleOccupancy(Role.DECODE, "h200", fp))
    return Replica(Occupancy("ml", name, DeploymentKey("ml", "pd"), "east", roles, ready))


def _quota(limits: Sequence[Mapping[str, Any]], preemption: str = "Never") -> FleetQuota:
    spec = {"namespaceSelector": {}, "limits": list(limits), "preemption": preemption}
    return FleetQuota.model_validate({"metadata": {"name": "team-a"}, "spec": spec})


@dataclass(frozen=True)
class Case:
    id: str
    limits: tuple[Mapping[str, Any], ...]
    replicas: tuple[Replica, ...]
    in_use: tuple[int, ...]
    exceeded: tuple[str, ...] = ()
    preempted: tuple[str, ...] = ()
    preemption: str = "Never"
    classes: Mapping[str, int] = field(default_factory=dict)


H100_16 = {"className": "h100", "accelerators": 16}
CASES = [
    Case("class-limit-counts-its-class-only", (H100_16,), (_r("a-0"), _r("b-0", "a100")), (8,), classes={"h100": 8}),
    Case(
        "device-selector-counts-every-matching-class",
        ({"deviceSelector": "hopper", "accelerators": 32},),
        (_r("a-0"), _r("a-1", "h200"), _r("b-0", "a100")),
        (16,),
        classes={"h100": 8, "h200": 8},
    ),
    Case(
        "a-replica-two-limits-cover-counts-against-both",
        (H100_16, {"deviceSelector": "hopper", "accelerators": 64}),
        (_r("a-0"),),
        (8, 8),
    ),
    Case(
        "serving-beyond-a-lowered-limit-stays-counted",
        ({"className": "h100", "accelerators": 8},),
        (_r("a-0"), _r("a-1")),
        (16,),
    ),
    Case(
        "not-serving-beyond-the-limit-is-exceeded-newest-first",
        (H100_16,),
        (_r("a-0"), _r("b-0", ready=False, created="T1"), _r("c-0", ready=False, created="T2")),
        (16,),
        exceeded=("ml/c-0",),
    ),
    Case(
        "not-serving-highest-priority-first",
        (H100_16,),
        (_r("a-0"), _r("b-0", ready=False, created="T1"), _r("c-0", ready=False, priority=100, created="T2")),
        (16,),
        exceeded=("ml/b-0",),
    ),
    Case(
        "a-replica-counts-on-every-limit-or-none",
        (H100_16, {"className": "h200", "accelerators": 0}),
        (_pd("pd-0", ready=False),),
        (0, 0),
        exceeded=("ml/pd-0",),
    ),
    Case(
        "never-serving-lower-priority-is-not-preempted",
        (H100_16,),
        (_r("a-0", priority=10), _r("a-1", priority=10), _r("p-0", ready=False, priority=100)),
        (16,),
        exceeded=("ml/p-0",),
    ),
    Case(
        "lower-priority-room-taken-by-a-higher-not-serving-yet",
        (H100_16,),
        (_r("a-0", priority=10), _r("a-1", priority=10), _r("p-0", ready=False, priority=100)),
        (24,),
        preemption="LowerPriority",
    ),
    Case(
        "lower-priority-preempted-once-the-higher-serves",
        (H100_16,),
        (_r("a-0", priority=10, created="T1"), _r("a-1", priority=10, created="T2"), _r("p-0", priority=100)),
        (24,),
        preempted=("ml/a-1",),
        preemption="LowerPriority",
    ),
    Case(
        "equal-priorities-never-preempt-each-other",
        ({"className": "h100", "accelerators": 8},),
        (_r("a-0", priority=10), _r("a-1", priority=10)),
        (16,),
        preemption="LowerPriority",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_quota_use(case: Case) -> None:
    quota = quota_of(_quota(case.limits, case.preemption))
    assert quota is not None
    got = count_use(quota, reversed(case.replicas), POOLS, _covers)
    assert tuple(u.in_use for u in got.limits) == case.in_use
    assert got.exceeded == case.exceeded
    assert got.preempted == case.preempted
    if case.classes:
        assert dict(got.limits[0].classes) == case.classes
    # Deterministic: the order replicas are listed in changes nothing.
    assert count_use(quota, case.replicas, POOLS, _covers) == got


def test_status_says_use_per_class_priority_and_deployment() -> None:
    quota = quota_of(_quota([H100_16]))
    assert quota is not None
    replicas = [
        _r("chat-0", priority=1000, klass="prod"),
        _r("chat-1", ready=False, priority=1000, klass="prod"),
        _r("eval-0", "h100", 4, ready=False),
    ]
    status = quota_status(["ml"], count_use(quota, replicas, POOLS, _covers))
    assert status == {
        "namespaceCount": 1,
        "namespaces": ["ml"],
        "summary": "h100 16/16",
        "limits": [
            {
                "name": "h100",
                "accelerators": 16,
                "inUse": 16,
                "classes": [{"className": "h100", "inUse": 16}],
                "priorities": [{"name": "prod", "value": 1000, "inUse": 16, "notServing": 8}],
                "deployments": [{"name": "ml/chat", "inUse": 16}],
            }
        ],
        "exceeded": ["ml/eval-0"],
    }
    # Read back as a deployment reads it: chat subtracts its own 16.
    published = quota_of(
        FleetQuota.model_validate({**_quota([H100_16]).model_dump(exclude_none=True), "status": status})
    )
    assert published is not None
    assert published.published[0].deployments == {"ml/chat": 16}
    assert published.exceeded == frozenset({"ml/eval-0"})
