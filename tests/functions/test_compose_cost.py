"""compose-model-deployment with spec.placement.strategy: where replicas go, what status says they cost, and why not.

A user reads three things: each replica's cluster with its decidedBy, status.cost (what the
deployment costs per hour), and the PlacementStrategy condition when CostOptimized or CarbonAware
cannot apply (no figure on any candidate, mixed currencies), with a warning naming the field.
The fleet is read the way the function reads it: clusters from their Structs, classes as models.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pydantic
import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_deployment.fn import FunctionRunner
from tests.unit.fleet import Pool, Shape, deployment, priced, site

API = "modelplane.ai/v1alpha1"
TP4 = Shape(tensor=4)


def _dump(model: pydantic.BaseModel) -> dict[str, Any]:
    return {**model.model_dump(exclude_none=True, by_alias=True), "apiVersion": API, "kind": type(model).__name__}


def _xr(replicas: int, placement: dict[str, Any] | None) -> dict[str, Any]:
    body = _dump(deployment("llm", replicas=replicas, shape=TP4))
    if placement is not None:
        body["spec"]["placement"] = placement
    return body


def _run(xr: dict[str, Any], clusters: list[dict[str, Any]], classes: list[dict[str, Any]]) -> dict[str, Any]:
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    for name, items in (
        ("clusters", clusters),
        ("classes", classes),
        ("replicas", []),
        ("quotas", []),
        ("priorityclasses", []),
    ):
        req.required_resources[name].SetInParent()
        for item in items:
            req.required_resources[name].items.add().resource.update(item)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    return got


H100 = _dump(priced("h100", "4.10", watts=700))
A100 = _dump(priced("a100", "2.40", watts=400))
EUR = _dump(priced("eur", "1.00", currency="EUR"))
FREE = _dump(priced("free"))


@dataclass(frozen=True)
class Case:
    placement: dict[str, Any] | None
    clusters: list[dict[str, Any]]
    classes: list[dict[str, Any]]
    where: list[tuple[str, str]]  # per replica: cluster, decidedBy
    cost: dict[str, Any] = field(default_factory=dict)  # status.cost ({} when absent)
    condition: tuple[str, str] | None = None  # PlacementStrategy: status, reason
    warns: str = ""  # a warning names this field


CASES = [
    pytest.param(
        Case(
            {"strategy": "CostOptimized", "maxReplicasPerCluster": 2},
            [
                _dump(site("a", Pool("gpu", "h100", 2))),
                _dump(site("b", Pool("gpu", "a100", 2), multiplier="0.5")),
            ],
            [H100, A100],
            [("b", "Cost"), ("b", "Cost"), ("a", "OnlyCandidate")],
            {"perHour": "26.00", "currency": "USD"},
            ("STATUS_CONDITION_TRUE", "CostOptimized"),
        ),
        id="cost-optimized-cheapest-first-then-the-limit",
    ),
    pytest.param(
        Case(
            {"strategy": "CarbonAware"},
            [_dump(site("a", Pool("gpu", "h100", 2), grams=400)), _dump(site("b", Pool("gpu", "h100", 2), grams=50))],
            [H100],
            [("b", "Carbon"), ("b", "Carbon"), ("b", "Carbon")],
            {"perHour": "49.20", "currency": "USD"},
            ("STATUS_CONDITION_TRUE", "CarbonAware"),
        ),
        id="carbon-aware-cleanest-first",
    ),
    pytest.param(
        Case(
            None,
            [_dump(site("a", Pool("gpu", "h100", 2))), _dump(site("b", Pool("gpu", "a100", 2)))],
            [H100, A100],
            [("a", "TieBreak"), ("b", "Spread"), ("a", "TieBreak")],
            {"perHour": "42.40", "currency": "USD"},
        ),
        id="spread-reports-cost-without-a-condition",
    ),
    pytest.param(
        Case(
            {"strategy": "CostOptimized"},
            [_dump(site("a", Pool("gpu", "free", 2))), _dump(site("b", Pool("gpu", "free", 2)))],
            [FREE],
            [("a", "TieBreak"), ("b", "Spread"), ("a", "TieBreak")],
            condition=("STATUS_CONDITION_FALSE", "NoCostData"),
            warns="spec.cost",
        ),
        id="no-cost-data-falls-back-to-spread",
    ),
    pytest.param(
        Case(
            {"strategy": "CostOptimized"},
            [_dump(site("a", Pool("gpu", "h100", 2))), _dump(site("b", Pool("gpu", "eur", 2)))],
            [H100, EUR],
            [("a", "TieBreak"), ("b", "Spread"), ("a", "TieBreak")],
            condition=("STATUS_CONDITION_FALSE", "MixedCurrencies"),
            warns="spec.cost.currency",
        ),
        id="mixed-currencies-fall-back-to-spread",
    ),
    pytest.param(
        Case(
            {"strategy": "CarbonAware"},
            [_dump(site("a", Pool("gpu", "h100", 2))), _dump(site("b", Pool("gpu", "h100", 2)))],
            [H100],
            [("a", "TieBreak"), ("b", "Spread"), ("a", "TieBreak")],
            {"perHour": "49.20", "currency": "USD"},
            condition=("STATUS_CONDITION_FALSE", "NoCarbonData"),
            warns="spec.carbon.gramsCO2PerKWh",
        ),
        id="no-carbon-data-falls-back-to-spread",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_placement_strategy(case: Case) -> None:
    got = _run(_xr(3, case.placement), case.clusters, case.classes)
    status = got["desired"]["composite"]["resource"]["status"]
    assert [(p["cluster"], p["decidedBy"]) for p in status["placements"]] == case.where
    assert status.get("cost", {}) == case.cost
    conditions = {c["type"]: c for c in got.get("conditions", [])}
    strategy = conditions.get("PlacementStrategy")
    assert ((strategy["status"], strategy["reason"]) if strategy else None) == case.condition
    warnings = [r["message"] for r in got.get("results", []) if r.get("severity") == "SEVERITY_WARNING"]
    said = [w for w in warnings if w.startswith("spec.placement.strategy")]
    if case.warns:
        assert len(said) == 1
        assert case.warns in said[0]
        assert "placed by Spread" in said[0]
    else:
        assert said == []
