"""The scheduler records why each replica it places went where it went, and explain says the same."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from modelplane.scheduling import DecidedBy, Origin
from modelplane.scheduling.explain import explain
from modelplane.topology import Role
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica
from tests.unit.fleet import Pool, Shape, cluster, deployment, gpu_class, plan, replica, replicas_of, view

CLASSES = [gpu_class("h100", per_node=8)]
TP4, TP8 = Shape(tensor=4), Shape(tensor=8)


def _other(name: str, where: str, shape: Shape = TP4) -> ModelReplica:
    """A replica of another deployment, holding GPUs on ``where``'s pool gpu."""
    return replica(
        f"{name}-0", cluster=where, pools={Role.UNIFIED: "gpu"}, shapes={Role.UNIFIED: shape}, deployment=name
    )


@dataclass(frozen=True)
class Case:
    deployment: ModelDeployment
    clusters: list[InferenceCluster]
    others: list[ModelReplica] = field(default_factory=list)
    want: dict[str, tuple[str, DecidedBy, str]] = field(default_factory=dict)  # replica -> cluster, by, message


CASES = [
    pytest.param(
        Case(
            deployment("llm", shape=TP4),
            [cluster("a", Pool("gpu", "h100", 1)), cluster("b", Pool("gpu", "h100", 1), ready=False)],
            want={"llm-0": ("a", DecidedBy.ONLY_CANDIDATE, "only candidate: no other cluster can take it now")},
        ),
        id="only-candidate",
    ),
    pytest.param(
        Case(
            deployment("llm", replicas=2, shape=TP4),
            [cluster("a", Pool("gpu", "h100", 2)), cluster("b", Pool("gpu", "h100", 2))],
            want={
                "llm-0": ("a", DecidedBy.TIE_BREAK, "tie-break: equal score with b, first by name"),
                "llm-1": ("b", DecidedBy.SPREAD, "spread: 0 replicas here vs 1 on a (runner-up)"),
            },
        ),
        id="tie-break-then-spread",
    ),
    pytest.param(
        Case(
            deployment("llm", shape=TP4),
            [cluster("a", Pool("gpu", "h100", 1)), cluster("b", Pool("gpu", "h100", 1))],
            others=[_other("other", "b")],
            want={"llm-0": ("b", DecidedBy.BEST_FIT, "best fit: strands 0 GPUs, leaves 0 free vs 4 stranded on a")},
        ),
        id="best-fit-fills-the-half-used-node",
    ),
    pytest.param(
        Case(
            deployment("llm", shape=TP8),
            [cluster("a", Pool("gpu", "h100", 2)), cluster("b", Pool("gpu", "h100", 1))],
            want={"llm-0": ("b", DecidedBy.BEST_FIT, "best fit: strands 0 GPUs, leaves 0 free vs 8 free on a")},
        ),
        id="best-fit-leaves-fewer-free",
    ),
    pytest.param(
        Case(
            deployment("llm", replicas=3, shape=TP4),
            [cluster("a", Pool("gpu", "h100", 2)), cluster("b", Pool("gpu", "h100", 1))],
            others=[_other("other", "a")],
            want={
                "llm-0": ("a", DecidedBy.BEST_FIT, "best fit: strands 0 GPUs, leaves 8 free vs 4 stranded on b"),
                "llm-1": ("b", DecidedBy.SPREAD, "spread: 0 replicas here vs 1 on a (runner-up)"),
                "llm-2": ("b", DecidedBy.BEST_FIT, "best fit: strands 0 GPUs, leaves 0 free vs 4 stranded on a"),
            },
        ),
        id="each-replica-decided-on-the-capacity-it-sees",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_the_recorded_decision_is_explains(case: Case) -> None:
    got = plan(case.deployment, case.clusters, CLASSES, case.others)
    recorded = {
        p.replica: (p.cluster, p.decision.decided_by, p.decision.message)
        for p in got.placements
        if p.decision is not None
    }
    assert recorded == case.want
    explained = explain(case.deployment, view(case.clusters, CLASSES, case.others))
    said = {s.replica: (s.chosen, DecidedBy(s.decided_by), s.why) for s in explained.steps if s.chosen}
    assert said == recorded


@pytest.mark.parametrize("case", CASES)
def test_a_kept_replica_is_not_decided_again(case: Case) -> None:
    first = plan(case.deployment, case.clusters, CLASSES, case.others)
    again = plan(case.deployment, case.clusters, CLASSES, [*case.others, *replicas_of(first, case.deployment)])
    assert [p.replica for p in again.placements] == list(case.want)
    assert all(p.origin is Origin.KEPT and p.decision is None for p in again.placements)
