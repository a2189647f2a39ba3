"""compose-fleet-quota: its namespaces' ModelReplicas in, use per limit, class, priority and deployment out."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_fleet_quota.fn import FunctionRunner
from tests.unit.fleet import HOPPER, Pool, cluster, gpu_class

API = "modelplane.ai/v1alpha1"
H100 = gpu_class("h100")
A100 = gpu_class("a100", arch="Ampere")
EAST = cluster("east", Pool("h100", "h100", 4), Pool("a100", "a100", 4))


def _dump(model: Any) -> dict[str, Any]:
    body: dict[str, Any] = model.model_dump(exclude_none=True, by_alias=True)
    return {**body, "apiVersion": API, "kind": type(model).__name__}


def _quota(limits: list[dict[str, Any]], *, selector: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "FleetQuota",
        "metadata": {"name": "team-a"},
        "spec": {
            "namespaceSelector": {"matchLabels": {"team": "a"}} if selector is None else selector,
            "limits": limits,
            **spec,
        },
    }


def _namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _replica(
    name: str, namespace: str, pool: str = "h100", *, ready: bool = True, priority: tuple[str, int] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "creationTimestamp": "2026-01-01T00:00:00Z"}
    if priority is not None:
        meta["annotations"] = {"modelplane.ai/priority-class": priority[0], "modelplane.ai/priority": str(priority[1])}
    return {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": meta,
        "spec": {
            "inferenceClusterRef": {"name": "east"},
            "deploymentRef": {"name": name.rsplit("-", 1)[0]},
            "poolName": pool,
            "nodeSelector": {"cel": "true"},
            "workers": {"topology": {"tensor": 8}, "template": {"spec": {"containers": [{"name": "e", "image": "x"}]}}},
        },
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


@dataclass(frozen=True)
class World:
    namespaces: tuple[dict[str, Any], ...] = (_namespace("team-a-prod", team="a"), _namespace("team-b", team="b"))
    replicas: tuple[dict[str, Any], ...] = ()
    fetched: tuple[str, ...] = ("namespaces", "clusters", "classes", "replicas-team-a-prod")
    extra: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _run(xr: dict[str, Any], world: World) -> dict[str, Any]:
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    answers = {
        "namespaces": list(world.namespaces),
        "clusters": [_dump(EAST)],
        "classes": [_dump(H100), _dump(A100)],
        **{
            f"replicas-{ns['metadata']['name']}": [
                r for r in world.replicas if r["metadata"]["namespace"] == ns["metadata"]["name"]
            ]
            for ns in world.namespaces
        },
        "replicas": list(world.replicas),
        **world.extra,
    }
    for name in world.fetched:
        req.required_resources[name].SetInParent()
        for item in answers.get(name, []):
            req.required_resources[name].items.add().resource.update(item)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    return got


def _conditions(got: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"].removeprefix("STATUS_CONDITION_"), c["reason"], c.get("message", ""))
        for c in got.get("conditions", [])
    }


def _status(got: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = got["desired"]["composite"].get("resource", {}).get("status", {})
    return status


def test_asks_for_its_namespaces_then_their_replicas_one_by_one() -> None:
    got = _run(_quota([{"className": "h100", "accelerators": 16}]), World(fetched=("namespaces",)))
    assert got["requirements"]["resources"] == {
        # A selector of matchLabels only: the API server filters the namespaces.
        "namespaces": {"apiVersion": "v1", "kind": "Namespace", "matchLabels": {"labels": {"team": "a"}}},
        "clusters": {"apiVersion": API, "kind": "InferenceCluster", "matchLabels": {}},
        "classes": {"apiVersion": API, "kind": "InferenceClass", "matchLabels": {}},
        "replicas-team-a-prod": {
            "apiVersion": API,
            "kind": "ModelReplica",
            "matchLabels": {},
            "namespace": "team-a-prod",
        },
    }
    assert _conditions(got)["WithinLimits"][:2] == ("UNKNOWN", "WaitingForInputs")
    assert got["desired"]["composite"]["ready"] == "READY_FALSE"


def test_a_selector_of_every_namespace_reads_one_list() -> None:
    got = _run(_quota([], selector={}), World(fetched=("namespaces",)))
    assert got["requirements"]["resources"]["replicas"] == {
        "apiVersion": API,
        "kind": "ModelReplica",
        "matchLabels": {},
    }
    assert got["requirements"]["resources"]["namespaces"] == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "matchLabels": {},
    }


@dataclass(frozen=True)
class Case:
    id: str
    quota: dict[str, Any]
    replicas: tuple[dict[str, Any], ...]
    summary: str
    within: tuple[str, str, str]
    exceeded: tuple[str, ...] = ()
    preempted: tuple[str, ...] = ()


H100_16 = {"className": "h100", "accelerators": 16}
CASES = [
    Case(
        "within",
        _quota([H100_16, {"className": "a100", "accelerators": 8}]),
        (_replica("chat-0", "team-a-prod"), _replica("other-0", "team-b"), _replica("eval-0", "team-a-prod", "a100")),
        "h100 8/16, a100 8/8",
        ("TRUE", "WithinLimits", "within every limit: h100 8 of 16, a100 8 of 8"),
    ),
    Case(
        "device-selector",
        _quota([{"deviceSelector": HOPPER, "accelerators": 16}]),
        (_replica("chat-0", "team-a-prod"), _replica("eval-0", "team-a-prod", "a100")),
        "limits[0] 8/16",
        ("TRUE", "WithinLimits", "within every limit: limits[0] 8 of 16"),
    ),
    Case(
        "exceeded",
        _quota([H100_16]),
        (
            _replica("chat-0", "team-a-prod"),
            _replica("chat-1", "team-a-prod"),
            _replica("eval-0", "team-a-prod", ready=False),
        ),
        "h100 16/16",
        (
            "FALSE",
            "OverLimit",
            "not serving yet beyond a limit, withdrawn by their deployments: team-a-prod/eval-0",
        ),
        exceeded=("team-a-prod/eval-0",),
    ),
    Case(
        "lowered-limit",
        _quota([{"className": "h100", "accelerators": 8}]),
        (_replica("chat-0", "team-a-prod"), _replica("chat-1", "team-a-prod")),
        "h100 16/8",
        ("FALSE", "OverLimit", "h100: 16 in use of 8 (serving replicas beyond the limit stay)"),
    ),
    Case(
        "preempted",
        _quota([{"className": "h100", "accelerators": 8}], preemption="LowerPriority"),
        (
            _replica("batch-0", "team-a-prod", priority=("batch", 10)),
            _replica("chat-0", "team-a-prod", priority=("prod", 1000)),
        ),
        "h100 16/8",
        (
            "FALSE",
            "OverLimit",
            "h100: 16 in use of 8 (serving replicas beyond the limit stay); serving, preempted by a higher"
            " priority that serves: team-a-prod/batch-0",
        ),
        preempted=("team-a-prod/batch-0",),
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_counts_use_per_limit(case: Case) -> None:
    got = _run(case.quota, World(replicas=case.replicas))
    status = _status(got)
    assert status["summary"] == case.summary
    assert status["namespaces"] == ["team-a-prod"]
    assert tuple(status.get("exceeded", [])) == case.exceeded
    assert tuple(status.get("preempted", [])) == case.preempted
    assert _conditions(got)["WithinLimits"] == case.within
    assert _conditions(got)["Valid"][:2] == ("TRUE", "Valid")
    assert got["desired"]["composite"]["ready"] == "READY_TRUE"


def test_status_shows_use_per_class_priority_and_deployment() -> None:
    replicas = (
        _replica("chat-0", "team-a-prod", priority=("prod", 1000)),
        _replica("chat-1", "team-a-prod", ready=False, priority=("prod", 1000)),
        _replica("eval-0", "team-a-prod", "a100"),
    )
    got = _run(_quota([{"deviceSelector": "true", "accelerators": 64}]), World(replicas=replicas))
    (limit,) = _status(got)["limits"]
    assert limit == {
        "name": "limits[0]",
        "accelerators": 64,
        "inUse": 24,
        "classes": [{"className": "a100", "inUse": 8}, {"className": "h100", "inUse": 16}],
        "priorities": [
            {"name": "prod", "value": 1000, "inUse": 16, "notServing": 8},
            {"value": 0, "inUse": 8, "notServing": 0},
        ],
        "deployments": [{"name": "team-a-prod/chat", "inUse": 16}, {"name": "team-a-prod/eval", "inUse": 8}],
    }


def test_a_device_selector_that_fails_covers_the_class_and_says_so() -> None:
    got = _run(
        _quota([{"deviceSelector": 'device.attributes["gpu.nvidia.com"].nope == 1', "accelerators": 8}]),
        World(replicas=(_replica("chat-0", "team-a-prod"),)),
    )
    assert _status(got)["summary"] == "limits[0] 8/8"
    status, reason, message = _conditions(got)["Valid"]
    assert (status, reason) == ("FALSE", "CELError")
    assert message.startswith("spec.limits[0].deviceSelector: ")
    assert got["desired"]["composite"]["ready"] == "READY_FALSE"


def test_a_replica_that_does_not_read_is_named_and_left_out() -> None:
    bad = _replica("chat-0", "team-a-prod")
    bad["spec"]["workers"]["topology"]["tensor"] = "eight"
    got = _run(_quota([H100_16]), World(replicas=(bad, _replica("chat-1", "team-a-prod"))))
    assert _status(got)["summary"] == "h100 8/16"
    assert any("ModelReplica chat-0" in r["message"] for r in got.get("results", []))
