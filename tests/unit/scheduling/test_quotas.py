"""FleetQuotas in the scheduler: nothing is placed beyond a limit, and the shortfall says why with figures.

Each quota's status is what its function would publish from the same replicas
(``modelplane.quota.count_use`` then ``quota_status``), read back as a deployment reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from modelplane.capacity import Occupancy, replica_occupancy
from modelplane.quota import Replica, count_use, quota_status
from modelplane.scheduling import Existing, Schedule
from modelplane.scheduling.devices import ClassJudge
from modelplane.scheduling.priority import (
    NO_PRIORITY,
    Priority,
    PriorityProblem,
    PriorityReason,
    resolve_priority,
)
from modelplane.scheduling.quotas import Published, Quota, Quotas, applying, covers, namespace_labels, quota_of
from modelplane.scheduling.view import class_views
from modelplane.topology import Role
from modelplane_models.fleet_quota import FleetQuota
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica
from tests.unit.fleet import NAMESPACE, Pool, Shape, cluster, deployment, fake_matcher, gpu_class, plan, replica

H100 = gpu_class("h100")
H200 = gpu_class("h200", memory="141Gi")
A100 = gpu_class("a100", arch="Ampere")
CLASSES = [H100, H200, A100]
# Four nodes of eight per class: 32 accelerators of each, more than any quota here allows.
EAST = cluster("east", Pool("h100", "h100", 4), Pool("h200", "h200", 4), Pool("a100", "a100", 4))
HOPPER = 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'
TP8 = Shape(tensor=8, cel="true")  # any class
ON_HOPPER = Shape(tensor=8, cel=HOPPER)  # h100 or h200
ON_H100 = Shape(tensor=8, cel=f"{HOPPER} && mem <= 80Gi")  # h100 only (h200 has 141Gi)


def _quota(
    *,
    limits: Sequence[Mapping[str, Any]],
    namespaces: Sequence[str] = (NAMESPACE,),
    allowed: Sequence[str] | None = None,
    preemption: str = "Never",
    name: str = "team-a",
) -> FleetQuota:
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}]}
    spec: dict[str, Any] = {"namespaceSelector": selector, "limits": list(limits), "preemption": preemption}
    if allowed is not None:
        spec["priorityClasses"] = list(allowed)
    return FleetQuota.model_validate({"metadata": {"name": name}, "spec": spec})


def _judge() -> ClassJudge:
    return ClassJudge(fake_matcher, class_views(CLASSES))


def _published(model: FleetQuota, replicas: Sequence[ModelReplica]) -> Quota:
    """The quota as its function publishes it from ``replicas``, read back as a deployment reads it."""
    quota = quota_of(model)
    assert quota is not None
    pool_class = {("east", p): p for p in ("h100", "h200", "a100")}
    judge = _judge()
    mine = [
        Replica(h)
        for h in map(replica_occupancy, replicas)
        if h is not None and quota.selector.matches(namespace_labels(h.namespace, {}))
    ]
    use = count_use(quota, mine, pool_class, lambda limit, c: covers(limit, c, judge))
    status = quota_status([NAMESPACE], use)
    published = quota_of(FleetQuota.model_validate({**model.model_dump(exclude_none=True), "status": status}))
    assert published is not None
    return published


def _running(
    name: str,
    pool: str,
    *,
    deployment_name: str = "other",
    ready: bool = True,
    priority: tuple[str, int] | None = None,
    namespace: str = NAMESPACE,
) -> ModelReplica:
    """A replica of 8 accelerators on ``pool`` of east."""
    return replica(
        name,
        cluster="east",
        pools={Role.UNIFIED: pool},
        shapes={Role.UNIFIED: TP8},
        deployment=deployment_name,
        ready=ready,
        priority=priority,
        namespace=namespace,
    )


@dataclass(frozen=True)
class Case:
    id: str
    quota: FleetQuota
    fleet: tuple[ModelReplica, ...] = ()
    replicas: int = 3
    shape: Shape = TP8
    priority: int = 0
    own: tuple[ModelReplica, ...] = ()
    placed: int = 3
    message: str = ""
    pools: Mapping[str, int] = field(default_factory=dict)


H100_16 = {"className": "h100", "accelerators": 16}
CASES = [
    Case(
        "class-limit-caps-placements",
        _quota(limits=[H100_16]),
        fleet=(_running("other-0", "h100"),),
        shape=ON_H100,
        placed=1,
        message=(
            "placed 1 of 3: llm-1, llm-2: QuotaExceeded: FleetQuota team-a allows 16 h100 accelerators,"
            " 16 in use, 8 requested"
        ),
        pools={"h100": 1},
    ),
    Case(
        "classes-no-limit-covers-take-the-rest",
        _quota(limits=[H100_16]),
        fleet=(_running("other-0", "h100"),),
        placed=3,
        pools={"h100": 1, "a100": 2},
    ),
    Case(
        "device-selector-limit-covers-every-matching-class",
        _quota(limits=[{"deviceSelector": HOPPER, "accelerators": 16}]),
        fleet=(_running("other-0", "h200"),),
        shape=ON_HOPPER,
        placed=1,
        message=(
            "placed 1 of 3: llm-1, llm-2: QuotaExceeded: FleetQuota team-a allows 16 accelerators matching"
            " limits[0].deviceSelector, 16 in use, 8 requested"
        ),
    ),
    Case(
        "zero-forbids-a-class",
        _quota(limits=[{"className": "a100", "accelerators": 0}, {"className": "h200", "accelerators": 0}]),
        replicas=2,
        placed=2,
        pools={"h100": 2},
    ),
    Case(
        "other-namespace-not-counted",
        _quota(limits=[H100_16]),
        fleet=(_running("other-0", "h100", namespace="team-b"), _running("other-1", "h100", namespace="team-b")),
        shape=ON_H100,
        replicas=2,
        placed=2,
    ),
    Case(
        "own-replicas-counted-once",
        _quota(limits=[H100_16]),
        own=(_running("llm-0", "h100", deployment_name="llm"), _running("llm-1", "h100", deployment_name="llm")),
        shape=ON_H100,
        replicas=2,
        placed=2,
    ),
    Case(
        "limit-lowered-under-serving-keeps-them",
        _quota(limits=[{"className": "h100", "accelerators": 8}]),
        own=(_running("llm-0", "h100", deployment_name="llm"), _running("llm-1", "h100", deployment_name="llm")),
        shape=ON_H100,
        replicas=3,
        placed=2,
        message=(
            "placed 2 of 3: llm-2: QuotaExceeded: FleetQuota team-a allows 8 h100 accelerators, 16 in use, 8 requested"
        ),
    ),
    Case(
        "higher-priority-takes-lower-not-serving",
        _quota(limits=[{"className": "h200", "accelerators": 8}, {"className": "h100", "accelerators": 0}]),
        fleet=(_running("other-0", "h200", ready=False, priority=("batch", 10)),),
        shape=ON_HOPPER,
        replicas=1,
        priority=100,
        placed=1,
        pools={"h200": 1},
    ),
    Case(
        "serving-lower-priority-does-not-give-way-under-never",
        _quota(limits=[{"className": "h200", "accelerators": 8}, {"className": "h100", "accelerators": 0}]),
        fleet=(_running("other-0", "h200", priority=("batch", 10)),),
        shape=ON_HOPPER,
        replicas=1,
        priority=100,
        placed=0,
        message=(
            "placed 0 of 1: llm-0: QuotaExceeded: FleetQuota team-a allows 8 h200 accelerators, 8 in use, 8 requested"
        ),
    ),
    Case(
        "serving-lower-priority-gives-way-under-lower-priority",
        _quota(
            limits=[{"className": "h200", "accelerators": 8}, {"className": "h100", "accelerators": 0}],
            preemption="LowerPriority",
        ),
        fleet=(_running("other-0", "h200", priority=("batch", 10)),),
        shape=ON_HOPPER,
        replicas=1,
        priority=100,
        placed=1,
        pools={"h200": 1},
    ),
    Case(
        "equal-priority-never-takes-the-place",
        _quota(
            limits=[{"className": "h200", "accelerators": 8}, {"className": "h100", "accelerators": 0}],
            preemption="LowerPriority",
        ),
        fleet=(_running("other-0", "h200", ready=False, priority=("prod", 100)),),
        shape=ON_HOPPER,
        replicas=1,
        priority=100,
        placed=0,
        message=(
            "placed 0 of 1: llm-0: QuotaExceeded: FleetQuota team-a allows 8 h200 accelerators, 8 in use, 8 requested"
        ),
    ),
    Case(
        "short-even-after-taking-lower-priorities-says-so",
        _quota(limits=[{"className": "h200", "accelerators": 8}, {"className": "h100", "accelerators": 0}]),
        fleet=(_running("other-0", "h200", ready=False, priority=("batch", 10)),),
        shape=Shape(tensor=8, count=2),
        replicas=1,
        priority=100,
        placed=0,
        message=(
            "placed 0 of 1: llm-0: QuotaExceeded: FleetQuota team-a allows 8 h200 accelerators, 8 in use,"
            " 16 requested (8 in use by lower priorities, which this priority may take)"
        ),
    ),
]


def _schedule(case: Case) -> Schedule:
    dep = deployment("llm", replicas=case.replicas, shape=case.shape)
    quotas = Quotas((_published(case.quota, [*case.fleet, *case.own]),), case.priority)
    own = [_occ(r) for r in case.own]
    existing = Existing(replicas={int(h.name.rsplit("-", 1)[1]): h for h in own})
    return plan(dep, [EAST], CLASSES, [*case.fleet, *case.own], existing=existing, quotas=quotas)


def _occ(r: ModelReplica) -> Occupancy:
    h = replica_occupancy(r)
    assert h is not None
    return h


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_placements_stay_within_quotas(case: Case) -> None:
    got = _schedule(case)
    assert got.placed == case.placed, got.message
    if case.message:
        assert got.message.startswith(case.message)
    if case.pools:
        pools: dict[str, int] = {}
        for p in got.placements:
            for r in p.roles:
                pools[r.pool] = pools.get(r.pool, 0) + 1
        assert pools == case.pools


def test_two_quotas_both_apply_and_the_first_short_is_named() -> None:
    tight = _quota(name="b-tight", limits=[{"className": "h100", "accelerators": 8}])
    loose = _quota(name="a-loose", limits=[{"className": "h100", "accelerators": 64}])
    dep = deployment("llm", replicas=2, shape=ON_H100)
    quotas = Quotas((_published(loose, []), _published(tight, [])))
    got = plan(dep, [EAST], CLASSES, quotas=quotas)
    assert got.placed == 1
    assert "FleetQuota b-tight allows 8 h100 accelerators, 8 in use, 8 requested" in got.message


def test_a_replica_a_quota_finds_beyond_its_limit_is_withdrawn_when_nothing_takes_it() -> None:
    quota = _quota(limits=[{"className": "h200", "accelerators": 8}, {"className": "h100", "accelerators": 0}])
    own = _running("llm-0", "h200", deployment_name="llm", ready=False)
    # A higher priority placed since: the quota counts it first and finds llm-0 beyond the limit.
    fleet = [_running("other-0", "h200", ready=False, priority=("prod", 100))]
    published = _published(quota, [*fleet, own])
    assert published.exceeded == frozenset({"ml/llm-0"})
    dep = deployment("llm", replicas=1, shape=ON_HOPPER)
    got = plan(
        dep,
        [EAST],
        CLASSES,
        [*fleet, own],
        existing=Existing(replicas={0: _occ(own)}),
        quotas=Quotas((published,)),
    )
    assert got.removed == ("llm-0",)
    assert got.placements == ()
    assert got.unplaced[0].reason == "QuotaExceeded"


def test_a_replica_a_quota_finds_beyond_its_limit_moves_to_a_class_it_does_not_cap() -> None:
    quota = _quota(limits=[{"className": "h200", "accelerators": 8}])
    own = _running("llm-0", "h200", deployment_name="llm", ready=False)
    fleet = [_running("other-0", "h200", ready=False, priority=("prod", 100))]
    dep = deployment("llm", replicas=1, shape=ON_HOPPER)
    got = plan(
        dep,
        [EAST],
        CLASSES,
        [*fleet, own],
        existing=Existing(replicas={0: _occ(own)}),
        quotas=Quotas((_published(quota, [*fleet, own]),)),
    )
    assert [(p.replica, p.roles[0].pool) for p in got.placements] == [("llm-0", "h100")]


def test_a_serving_replica_is_never_withdrawn_for_a_quota() -> None:
    own = _running("llm-0", "h200", deployment_name="llm")
    quota = quota_of(_quota(limits=[{"className": "h200", "accelerators": 0}]))
    assert quota is not None
    listed = Quota(quota.name, quota.selector, quota.limits, exceeded=frozenset({"ml/llm-0"}))
    dep = deployment("llm", replicas=1, shape=TP8)
    got = plan(dep, [EAST], CLASSES, [own], existing=Existing(replicas={0: _occ(own)}), quotas=Quotas((listed,)))
    assert [p.replica for p in got.placements] == ["llm-0"]
    assert got.removed == ()


def test_a_serving_replica_preempted_under_lower_priority_is_retired_and_not_replaced() -> None:
    quota = _quota(
        limits=[{"className": "h200", "accelerators": 8}, {"className": "h100", "accelerators": 0}],
        preemption="LowerPriority",
    )
    own = _running("llm-0", "h200", deployment_name="llm", priority=("batch", 10))
    fleet = [_running("other-0", "h200", priority=("prod", 100))]  # serves in its place, beyond the limit
    published = _published(quota, [*fleet, own])
    assert published.preempted == frozenset({"ml/llm-0"})
    dep = deployment("llm", replicas=1, shape=ON_HOPPER)
    got = plan(
        dep,
        [EAST],
        CLASSES,
        [*fleet, own],
        existing=Existing(replicas={0: _occ(own)}),
        quotas=Quotas((published,), priority=10),
    )
    assert got.preempted == ("llm-0",)
    assert [p.replica for p in got.placements] == []
    assert got.unplaced[0].reason == "QuotaExceeded"


def test_a_preemption_waits_while_a_replica_does_not_say_whether_it_is_ready() -> None:
    quota = _quota(limits=[{"className": "h200", "accelerators": 8}], preemption="LowerPriority")
    own = _running("llm-0", "h200", deployment_name="llm", priority=("batch", 10))
    other = _running("llm-1", "h100", deployment_name="llm", priority=("batch", 10), ready=False)
    fleet = [_running("other-0", "h200", priority=("prod", 100))]
    published = _published(quota, [*fleet, own])
    dep = deployment("llm", replicas=2, shape=TP8)
    got = plan(
        dep,
        [EAST],
        CLASSES,
        [*fleet, own, other],
        existing=Existing(replicas={0: _occ(own), 1: _occ(other)}, unsure=frozenset({1})),
        quotas=Quotas((published,), priority=10),
    )
    assert got.preempted == ()
    assert got.retired == ()
    # It is leaving: its replacement may surge, but nothing is retired while llm-1 does not say.
    assert {p.replica: p.state for p in got.placements}["llm-0"] == "Leaving"


@pytest.mark.parametrize(
    ("name", "classes", "allowed", "want"),
    [
        pytest.param("", {}, None, NO_PRIORITY, id="none-is-zero"),
        pytest.param("prod", {"prod": 1000}, None, Priority("prod", 1000), id="any-class-when-unset"),
        pytest.param("prod", {"prod": 1000}, ["prod"], Priority("prod", 1000), id="allowed"),
        pytest.param(
            "gold",
            {"prod": 1000},
            None,
            PriorityProblem(PriorityReason.NOT_FOUND, "spec.priority: FleetPriorityClass gold not found"),
            id="not-found",
        ),
        pytest.param(
            "prod",
            {"prod": 1000, "batch": 10},
            ["batch", "best-effort"],
            PriorityProblem(
                PriorityReason.NOT_ALLOWED,
                "spec.priority: FleetQuota team-a allows only priority classes batch, best-effort, not prod",
            ),
            id="not-allowed",
        ),
        pytest.param(
            "prod",
            {"prod": 1000},
            [],
            PriorityProblem(
                PriorityReason.NOT_ALLOWED, "spec.priority: FleetQuota team-a allows no priority class, not prod"
            ),
            id="none-allowed",
        ),
        pytest.param("", {}, [], NO_PRIORITY, id="no-priority-always-allowed"),
    ],
)
def test_priority_resolves_against_classes_and_quotas(
    name: str, classes: dict[str, int], allowed: list[str] | None, want: Priority | PriorityProblem
) -> None:
    quota = quota_of(_quota(limits=[], allowed=allowed))
    assert quota is not None
    assert resolve_priority(name, classes, [quota]) == want


def _selecting(name: str, selector: dict[str, Any], namespaces: list[str] | None) -> Quota:
    body: dict[str, Any] = {"metadata": {"name": name}, "spec": {"namespaceSelector": selector}}
    if namespaces is not None:
        body["status"] = {"namespaces": namespaces}
    quota = quota_of(FleetQuota.model_validate(body))
    assert quota is not None
    return quota


@pytest.mark.parametrize(
    ("namespace", "want"),
    [
        pytest.param("team-b", ["every", "published"], id="listed-by-its-quota"),
        pytest.param("ml", ["by-name", "every"], id="by-name-before-its-quota-published"),
        pytest.param("other", ["every"], id="only-the-quota-of-every-namespace"),
    ],
)
def test_quotas_apply_to_the_namespaces_they_found(namespace: str, want: list[str]) -> None:
    quotas = [
        _selecting("published", {"matchLabels": {"team": "b"}}, ["team-b", "team-b-dev"]),
        _selecting("by-name", {"matchLabels": {"kubernetes.io/metadata.name": "ml"}}, None),
        _selecting("every", {}, []),
    ]
    assert [q.name for q in applying(quotas, namespace)] == want


_READY = {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}


def _on_removing_pool(klass: str, max_unavailable: int) -> Schedule:
    """llm-0 and llm-1 serve on east's pool ``old`` (taken out of the spec, of class ``klass``); team-a caps h100 at 16.

    The quota's function counts both under the class their cluster published for the pool: 16 in use.
    """
    east = cluster("east", Pool("h100", "h100", 4), removing=["old"], removing_class=klass)
    own = []
    for i in range(2):
        r = replica(
            f"llm-{i}", cluster="east", pools={Role.UNIFIED: "old"}, shapes={Role.UNIFIED: TP8}, deployment="llm"
        )
        own.append(ModelReplica.model_validate({**r.model_dump(exclude_none=True), "status": _READY}))
    quota = quota_of(_quota(limits=[{"className": "h100", "accelerators": 16}]))
    assert quota is not None
    published = {0: Published(in_use=16, deployments={f"{NAMESPACE}/llm": 16})}
    counted = Quota(quota.name, quota.selector, quota.limits, published=published, namespaces=quota.namespaces)
    body = deployment("llm", replicas=2, shape=ON_H100).model_dump(exclude_none=True, by_alias=True)
    body["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": max_unavailable}}
    existing = Existing(replicas={i: _occ(o) for i, o in enumerate(own)})
    return plan(
        ModelDeployment.model_validate(body), [east], CLASSES, own, existing=existing, quotas=Quotas((counted,))
    )


FULL = "QuotaExceeded: FleetQuota team-a allows 16 h100 accelerators, 16 in use, 8 requested"


@pytest.mark.parametrize(
    ("klass", "max_unavailable", "new", "retired", "pending", "why"),
    [
        # Both hold the team's 16 h100 until they have moved: no surge replacement fits the quota, and
        # with maxUnavailable 0 none may be retired first, so both stay and say why.
        pytest.param("h100", 0, [], [], [], f"llm-2: {FULL}", id="surge-beyond-the-quota-waits"),
        # Within maxUnavailable one is retired, and its replacement waits for the accelerators it gives back.
        pytest.param("h100", 1, [], ["llm-0"], ["llm-2"], f"llm-3: {FULL}", id="retired-first-replacement-pending"),
        # A cluster that has not published the pool's class (written before it did): nothing to charge it to.
        pytest.param("", 0, ["llm-2"], [], [], "", id="class-unknown-not-charged"),
    ],
)
def test_replicas_on_a_pool_taken_out_of_the_spec_count_against_their_quota(
    klass: str, max_unavailable: int, new: list[str], retired: list[str], pending: list[str], why: str
) -> None:
    got = _on_removing_pool(klass, max_unavailable)
    assert [p.replica for p in got.placements if p.roles[0].pool == "h100"] == new
    assert list(got.retired) == retired
    assert [p.replica for p in got.pending] == pending
    assert got.removed == ()
    if why:
        assert why in got.message, got.message
