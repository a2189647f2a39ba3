"""compose-model-deployment: the fleet in, ModelReplicas and ModelEndpoints out, never dropping what runs."""

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
from modelplane.scheduling import serving_shape, shape_revision
from tests.unit.fleet import NAMESPACE, Pool, Shape, cluster, deployment, gpu_class

H100 = gpu_class("h100")
EAST = cluster("east", Pool("gpu", "h100", 1), labels={"region": "us-east"})
WEST = cluster("west", Pool("gpu", "h100", 1), labels={"region": "us-west"})
REQUIREMENTS = {
    "clusters": {"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceCluster", "matchLabels": {}},
    "classes": {"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceClass", "matchLabels": {}},
    # Only its own replicas, in its namespace: their clusters publish what the others hold.
    "replicas": {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "matchLabels": {"labels": {"modelplane.ai/deployment": "llm"}},
        "namespace": "ml",
    },
    # Every FleetQuota (each lists the namespaces it selects) and FleetPriorityClass.
    "quotas": {"apiVersion": "modelplane.ai/v1alpha1", "kind": "FleetQuota", "matchLabels": {}},
    "priorityclasses": {"apiVersion": "modelplane.ai/v1alpha1", "kind": "FleetPriorityClass", "matchLabels": {}},
}
TP4 = Shape(tensor=4)
# Each replica its own endpoint, as before in-cluster routing (mode Pool is the default).
REPLICA_MODE = {"mode": "Replica"}


def _dump(model: pydantic.BaseModel) -> dict[str, Any]:
    body = model.model_dump(exclude_none=True, by_alias=True)
    return {**body, "apiVersion": "modelplane.ai/v1alpha1", "kind": type(model).__name__}


def _replica_resource(
    name: str, cluster_name: str, *, ready: bool = False, url: str | None = None, host: str | None = None
) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if url:
        status["endpoint"] = {"url": url}
    if host:
        status.setdefault("endpoint", {})["host"] = host
    spec = {
        "inferenceClusterRef": {"name": cluster_name},
        "deploymentRef": {"name": "llm"},
        "poolName": "gpu",
        "nodeSelector": TP4.node_selector(),
        "workers": TP4.workers(),
    }
    # As composed: the revision label names the shape of its spec.
    labels = {"modelplane.ai/deployment": "llm", "modelplane.ai/revision": shape_revision(serving_shape(spec))}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": spec,
        "status": status,
    }


@dataclass(frozen=True)
class Fleet:
    clusters: tuple[pydantic.BaseModel, ...] = (EAST, WEST)
    classes: tuple[pydantic.BaseModel, ...] = (H100,)
    replicas: tuple[dict[str, Any], ...] = ()
    fetched: bool = True
    observed: dict[str, dict[str, Any]] = field(default_factory=dict)


def _req(xr: dict[str, Any], fleet: Fleet) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    for key, body in fleet.observed.items():
        req.observed.resources[key].resource.update(body)
    if fleet.fetched:
        for name, items in (
            ("clusters", [_dump(c) for c in fleet.clusters]),
            ("classes", [_dump(c) for c in fleet.classes]),
            ("replicas", list(fleet.replicas)),
            ("quotas", []),
            ("priorityclasses", []),
        ):
            req.required_resources[name].SetInParent()
            for item in items:
                req.required_resources[name].items.add().resource.update(item)
    return req


def _run(xr: dict[str, Any], fleet: Fleet) -> dict[str, Any]:
    rsp = asyncio.run(FunctionRunner().RunFunction(_req(xr, fleet), None))
    got: dict[str, Any] = json_format.MessageToDict(rsp)
    return got


def _xr(replicas: int = 2, **kwargs: Any) -> dict[str, Any]:
    return _dump(deployment("llm", replicas=replicas, shape=TP4, **kwargs))


def _scheduled(got: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == "Scheduled")


def test_requirements_are_asked_for_and_nothing_is_dropped_while_waiting() -> None:
    observed = {"replica-0": _replica_resource("llm-0", "east", ready=True)}
    got = _run(_xr(), Fleet(fetched=False, observed=observed))
    assert got["requirements"]["resources"] == REQUIREMENTS
    assert _scheduled(got)["reason"] == "WaitingForFleet"
    kept = got["desired"]["resources"]["replica-0"]["resource"]
    assert kept["metadata"]["name"] == "llm-0"
    assert "status" not in kept


def test_spreads_replicas_and_reports_status() -> None:
    got = _run(_xr(), Fleet())
    desired = got["desired"]["resources"]
    assert sorted(desired) == ["replica-0", "replica-1"]
    clusters = sorted(desired[k]["resource"]["spec"]["inferenceClusterRef"]["name"] for k in desired)
    assert clusters == ["east", "west"]
    replica = desired["replica-0"]["resource"]
    revision = shape_revision(serving_shape(_xr()["spec"]))
    assert replica["metadata"] == {
        "name": "llm-0",
        "namespace": NAMESPACE,
        "labels": {
            "modelplane.ai/deployment": "llm",
            "modelplane.ai/revision": revision,
            # Its cluster, which InferenceClusters select their replicas by.
            "modelplane.ai/cluster": replica["spec"]["inferenceClusterRef"]["name"],
        },
        # Why it went there, recorded as it is placed.
        "annotations": {
            "modelplane.ai/placed-by": (
                '{"decidedBy":"TieBreak","why":"tie-break: equal score with west, first by name"}'
            )
        },
    }
    assert replica["spec"]["poolName"] == "gpu"
    assert replica["spec"]["workers"]["topology"]["tensor"] == 4
    assert desired["replica-0"]["ready"] == "READY_FALSE"
    status = got["desired"]["composite"]["resource"]["status"]
    assert status["replicas"] == 2
    assert status["readyReplicas"] == 0
    assert status["selector"] == "modelplane.ai/deployment=llm"
    assert [(p["replica"], p["decidedBy"], p["why"]) for p in status["placements"]] == [
        ("llm-0", "TieBreak", "tie-break: equal score with west, first by name"),
        ("llm-1", "Spread", "spread: 0 replicas here vs 1 on east (runner-up)"),
    ]
    assert _scheduled(got) == {
        "type": "Scheduled",
        "status": "STATUS_CONDITION_TRUE",
        "reason": "Scheduled",
        "message": "placed 2 of 2",
    }
    assert got["desired"]["composite"]["ready"] == "READY_FALSE"


def test_partial_shortfall_is_insufficient_capacity() -> None:
    got = _run(_xr(replicas=5), Fleet())
    scheduled = _scheduled(got)
    assert scheduled["status"] == "STATUS_CONDITION_FALSE"
    assert scheduled["reason"] == "InsufficientCapacity"
    assert scheduled["message"].startswith("placed 4 of 5: llm-4: InsufficientCapacity")
    status = got["desired"]["composite"]["resource"]["status"]
    assert status["unschedulable"][0]["replica"] == "llm-4"
    assert got["results"][0]["severity"] == "SEVERITY_WARNING"


def test_no_matching_cluster() -> None:
    xr = _xr(match_labels={"region": "mars"})
    got = _run(xr, Fleet())
    assert _scheduled(got)["reason"] == "NoMatchingClusters"
    assert "desired" not in got or "resources" not in got["desired"]


def test_ready_replicas_and_endpoints_come_from_observed_replicas() -> None:
    observed = {
        "replica-0": _replica_resource(
            "llm-0", "east", ready=True, url="http://east.example/", host="llm-0.ml.replicas.modelplane.ai"
        ),
        "replica-1": _replica_resource("llm-1", "west"),
    }
    fleet = Fleet(replicas=tuple(observed.values()), observed=observed)
    got = _run(_xr(routing=REPLICA_MODE), fleet)
    desired = got["desired"]["resources"]
    # Sticky: each replica stays on the cluster it runs on.
    assert desired["replica-0"]["resource"]["spec"]["inferenceClusterRef"]["name"] == "east"
    assert desired["replica-1"]["resource"]["spec"]["inferenceClusterRef"]["name"] == "west"
    assert desired["replica-0"]["ready"] == "READY_TRUE"
    # The endpoint reaches the replica's virtual host on its cluster's gateway, served at the root.
    assert desired["endpoint-0"]["resource"]["spec"] == {
        "url": "http://east.example/",
        "host": "llm-0.ml.replicas.modelplane.ai",
        "replicaRef": {"name": "llm-0"},
    }
    assert "endpoint-1" not in desired  # not reachable yet: no URL reported
    assert got["desired"]["composite"]["resource"]["status"]["readyReplicas"] == 1


def test_an_endpoint_without_a_reported_host_sends_the_url_host() -> None:
    observed = {"replica-0": _replica_resource("llm-0", "east", ready=True, url="http://east.example/")}
    fleet = Fleet(replicas=tuple(observed.values()), observed=observed)
    desired = _run(_xr(routing=REPLICA_MODE), fleet)["desired"]["resources"]
    assert desired["endpoint-0"]["resource"]["spec"] == {"url": "http://east.example/", "replicaRef": {"name": "llm-0"}}


def test_invalid_deployment_keeps_every_replica() -> None:
    observed = {"replica-0": _replica_resource("llm-0", "east", ready=True)}
    xr = _xr()
    xr["spec"]["workers"]["topology"] = {"tensor": 0}
    got = _run(xr, Fleet(observed=observed))
    assert sorted(got["desired"]["resources"]) == ["replica-0"]
    scheduled = _scheduled(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_FALSE", "InvalidSpec")
    assert "spec.workers.topology.tensor" in scheduled["message"]


@pytest.mark.parametrize(
    ("replicas", "want"),
    [
        pytest.param(1, ["replica-0"], id="scale-down-keeps-lowest-ordinal"),
        pytest.param(3, ["replica-0", "replica-1", "replica-2"], id="scale-up-adds-next-ordinal"),
    ],
)
def test_scaling(replicas: int, want: list[str]) -> None:
    observed = {
        "replica-0": _replica_resource("llm-0", "east", ready=True),
        "replica-1": _replica_resource("llm-1", "west", ready=True),
    }
    big = (cluster("east", Pool("gpu", "h100", 2)), cluster("west", Pool("gpu", "h100", 2)))
    got = _run(_xr(replicas=replicas), Fleet(clusters=big, replicas=tuple(observed.values()), observed=observed))
    assert sorted(got["desired"]["resources"]) == want


def test_a_malformed_cluster_is_ignored_with_a_warning() -> None:
    bad = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "bad"}, "spec": 7}

    req = _req(_xr(replicas=1), Fleet())
    req.required_resources["clusters"].items.add().resource.update(bad)
    got = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    assert any("ignoring InferenceCluster bad" in r["message"] for r in got["results"])
    assert _scheduled(got)["status"] == "STATUS_CONDITION_TRUE"
