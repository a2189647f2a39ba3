"""compose-model-deployment under FleetQuotas: the shortfall with figures, spec.priority, nothing dropped."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_deployment.fn import FunctionRunner
from tests.unit.fleet import NAMESPACE, Pool, Shape, cluster, deployment, gpu_class

API = "modelplane.ai/v1alpha1"
H100 = gpu_class("h100")
EAST = cluster("east", Pool("gpu", "h100", 4))
TP8 = Shape(tensor=8)


def _dump(model: Any) -> dict[str, Any]:
    body: dict[str, Any] = model.model_dump(exclude_none=True, by_alias=True)
    return {**body, "apiVersion": API, "kind": type(model).__name__}


def _quota(accelerators: int, *, in_use: int = 0, allowed: list[str] | None = None, team: str = "a") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"team": team}},
        "limits": [{"className": "h100", "accelerators": accelerators}],
    }
    if allowed is not None:
        spec["priorityClasses"] = allowed
    # As the quota's function publishes it: the namespaces it selects, and each limit's use.
    status = {
        "namespaces": [NAMESPACE] if team == "a" else ["team-b"],
        "limits": [{"name": "h100", "accelerators": accelerators, "inUse": in_use}],
    }
    return {
        "apiVersion": API,
        "kind": "FleetQuota",
        "metadata": {"name": f"team-{team}"},
        "spec": spec,
        "status": status,
    }


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "FleetPriorityClass", "metadata": {"name": name}, "spec": {"value": value}}


@dataclass(frozen=True)
class World:
    quotas: tuple[dict[str, Any], ...] = ()
    classes: tuple[dict[str, Any], ...] = ()
    observed: dict[str, dict[str, Any]] = field(default_factory=dict)


def _run(xr: dict[str, Any], world: World) -> dict[str, Any]:
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    for key, body in world.observed.items():
        req.observed.resources[key].resource.update(body)
    answers = {
        "clusters": [_dump(EAST)],
        "classes": [_dump(H100)],
        "replicas": [],
        "quotas": list(world.quotas),
        "priorityclasses": list(world.classes),
    }
    for name, items in answers.items():
        req.required_resources[name].SetInParent()
        for item in items:
            req.required_resources[name].items.add().resource.update(item)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    return got


def _xr(replicas: int = 2, priority: str | None = None) -> dict[str, Any]:
    return _dump(deployment("llm", replicas=replicas, shape=TP8, priority=priority, routing={"mode": "Replica"}))


def _scheduled(got: dict[str, Any]) -> tuple[str, str, str]:
    c = next(c for c in got["conditions"] if c["type"] == "Scheduled")
    return c["status"].removeprefix("STATUS_CONDITION_"), c["reason"], c.get("message", "")


def _replicas(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["resource"] for k, v in got["desired"].get("resources", {}).items() if k.startswith("replica-")}


@pytest.mark.parametrize(
    ("world", "placed", "scheduled"),
    [
        pytest.param(World(), 2, ("TRUE", "Scheduled", "placed 2 of 2"), id="no-quota"),
        pytest.param(
            World(quotas=(_quota(16, in_use=8),)),
            1,
            (
                "FALSE",
                "QuotaExceeded",
                "placed 1 of 2: llm-1: QuotaExceeded: FleetQuota team-a allows 16 h100 accelerators, 16 in use,"
                " 8 requested",
            ),
            id="shortfall-with-figures",
        ),
        pytest.param(
            World(quotas=(_quota(16, in_use=8, team="b"),)),
            2,
            ("TRUE", "Scheduled", "placed 2 of 2"),
            id="another-team's-quota",
        ),
    ],
)
def test_a_quota_caps_what_is_placed(world: World, placed: int, scheduled: tuple[str, str, str]) -> None:
    got = _run(_xr(), world)
    assert len(_replicas(got)) == placed
    assert _scheduled(got) == scheduled


def test_priority_is_written_on_each_replica() -> None:
    got = _run(_xr(1, "prod"), World(classes=(_priority_class("prod", 1000),)))
    (replica,) = _replicas(got).values()
    assert replica["metadata"]["annotations"] == {
        "modelplane.ai/placed-by": replica["metadata"]["annotations"]["modelplane.ai/placed-by"],
        "modelplane.ai/priority": "1000",
        "modelplane.ai/priority-class": "prod",
    }


RUNNING = {
    "apiVersion": API,
    "kind": "ModelReplica",
    "metadata": {"name": "llm-0", "namespace": NAMESPACE, "labels": {"modelplane.ai/deployment": "llm"}},
    "spec": {
        "inferenceClusterRef": {"name": "east"},
        "deploymentRef": {"name": "llm"},
        "poolName": "gpu",
        "nodeSelector": TP8.node_selector(),
        "workers": TP8.workers(),
    },
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}


@pytest.mark.parametrize(
    ("world", "scheduled"),
    [
        pytest.param(
            World(classes=(_priority_class("batch", 10),)),
            ("FALSE", "PriorityClassNotFound", "spec.priority: FleetPriorityClass prod not found"),
            id="not-found",
        ),
        pytest.param(
            World(quotas=(_quota(64, allowed=["batch"]),), classes=(_priority_class("prod", 1000),)),
            (
                "FALSE",
                "PriorityNotAllowed",
                "spec.priority: FleetQuota team-a allows only priority classes batch, not prod",
            ),
            id="not-allowed",
        ),
    ],
)
def test_a_priority_that_cannot_be_used_keeps_what_runs(world: World, scheduled: tuple[str, str, str]) -> None:
    observed = World(world.quotas, world.classes, {"replica-0": RUNNING})
    got = _run(_xr(3, "prod"), observed)
    assert _scheduled(got) == scheduled
    assert list(_replicas(got)) == ["replica-0"]
    assert _replicas(got)["replica-0"]["spec"] == RUNNING["spec"]
    assert got["desired"]["composite"]["ready"] == "READY_FALSE"
