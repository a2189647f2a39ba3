"""compose-model-deployment never drops or rewrites what runs for a missing input or a change that cannot run.

A steady state of two Ready replicas (llm-0 on east, llm-1 on west, each with
its endpoint) is called again with one thing broken; what runs must be kept as
it was observed and the problem named in ``Scheduled`` and a warning.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
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

TP8 = Shape(tensor=8)
API = "modelplane.ai/v1alpha1"


def _dump(model: pydantic.BaseModel) -> dict[str, Any]:
    body = model.model_dump(exclude_none=True, by_alias=True)
    return {**body, "apiVersion": API, "kind": type(model).__name__}


def _xr(replicas: int = 2, shape: Shape = TP8) -> dict[str, Any]:
    # Routing mode Replica: each replica's own endpoint is what these tests follow.
    return _dump(deployment("llm", replicas=replicas, shape=shape, routing={"mode": "Replica"}))


REVISION = shape_revision(serving_shape(_xr()["spec"]))


def _replica(ordinal: int, where: str, *, ready: bool = True) -> dict[str, Any]:
    name = f"llm-{ordinal}"
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ready:
        status["endpoint"] = {"url": f"http://{where}.example/", "host": f"{name}.ml.replicas.modelplane.ai"}
    return {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"modelplane.ai/deployment": "llm", "modelplane.ai/revision": REVISION},
        },
        "spec": {
            "inferenceClusterRef": {"name": where},
            "deploymentRef": {"name": "llm"},
            "nodeSelector": TP8.node_selector(),
            "workers": TP8.workers(),
            "poolName": "gpu",
        },
        "status": status,
    }


def _endpoint(ordinal: int, where: str) -> dict[str, Any]:
    name = f"llm-{ordinal}"
    return {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"modelplane.ai/deployment": "llm"}},
        "spec": {
            "url": f"http://{where}.example/",
            "host": f"{name}.ml.replicas.modelplane.ai",
            "replicaRef": {"name": name},
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "backendName": name},
    }


@dataclass
class World:
    """One call's inputs: the XR, the fleet (required) and the composed resources (observed)."""

    xr: dict[str, Any] = field(default_factory=_xr)
    clusters: list[dict[str, Any]] = field(
        default_factory=lambda: [
            _dump(cluster("east", Pool("gpu", "h100", 1))),
            _dump(cluster("west", Pool("gpu", "h100", 1))),
            _dump(cluster("south", Pool("gpu", "h100", 1))),
        ]
    )
    classes: list[dict[str, Any]] = field(default_factory=lambda: [_dump(gpu_class("h100"))])
    observed: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "replica-0": _replica(0, "east"),
            "endpoint-0": _endpoint(0, "east"),
            "replica-1": _replica(1, "west"),
            "endpoint-1": _endpoint(1, "west"),
        }
    )
    replicas: list[dict[str, Any]] | None = None  # None: the observed replicas

    def request(self) -> fnv1.RunFunctionRequest:
        req = fnv1.RunFunctionRequest(
            observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(self.xr)))
        )
        for key, body in self.observed.items():
            req.observed.resources[key].resource.update(body)
        listed = [v for k, v in self.observed.items() if k.startswith("replica-")]
        for name, items in (
            ("clusters", self.clusters),
            ("classes", self.classes),
            ("replicas", listed if self.replicas is None else self.replicas),
            ("quotas", []),
            ("priorityclasses", []),
        ):
            req.required_resources[name].SetInParent()
            for item in items:
                req.required_resources[name].items.add().resource.update(item)
        return req


def _run(world: World) -> dict[str, Any]:
    rsp = asyncio.run(FunctionRunner().RunFunction(world.request(), None))
    got: dict[str, Any] = json_format.MessageToDict(rsp)
    return got


def _desired(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}


def _scheduled(got: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == "Scheduled")


def _warnings(got: dict[str, Any]) -> list[str]:
    return [r["message"] for r in got.get("results", []) if r["severity"] == "SEVERITY_WARNING"]


def _cluster_named(world: World, name: str) -> dict[str, Any]:
    return next(c for c in world.clusters if c["metadata"]["name"] == name)


def _drop_east(world: World) -> None:
    world.clusters = [c for c in world.clusters if c["metadata"]["name"] != "east"]


def _delete_east(world: World) -> None:
    _cluster_named(world, "east")["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"


def _malform_east(world: World) -> None:
    _cluster_named(world, "east")["spec"]["nodePools"][0]["nodeCount"] = "three"


def _rename_east_pool(world: World) -> None:
    _cluster_named(world, "east")["spec"]["nodePools"][0]["name"] = "gpu-v2"


def _drop_class(world: World) -> None:
    world.classes = []


def _set_shape(shape: Shape) -> Callable[[World], None]:
    def mutate(world: World) -> None:
        world.xr = _xr(shape=shape)

    return mutate


@dataclass(frozen=True)
class Case:
    fault: Callable[[World], None]
    reason: str
    names: str  # what the warning must name


CASES = [
    pytest.param(Case(_drop_east, "ClusterNotFound", "InferenceCluster east"), id="cluster-not-listed"),
    pytest.param(Case(_malform_east, "ClusterUnreadable", "InferenceCluster east"), id="cluster-malformed"),
    pytest.param(Case(_rename_east_pool, "PoolNotFound", "pool gpu"), id="pool-renamed"),
    pytest.param(Case(_drop_class, "ClassNotFound", "InferenceClass h100"), id="class-gone"),
    pytest.param(
        Case(
            _set_shape(Shape(tensor=8, cel='device.attributes["gpu.nvidia.com"].architecture ==')),
            "CELError",
            "spec.nodeSelector.cel",
        ),
        id="cel-syntax-error",
    ),
    pytest.param(
        Case(_set_shape(Shape(tensor=16)), "TopologyExceedsNode", "spec.workers.topology"), id="impossible-topology"
    ),
    pytest.param(
        Case(
            _set_shape(Shape(tensor=8, cel='device.attributes["gpu.nvidia.com"].architecture == "Blackwell"')),
            "SelectorMismatch",
            "spec.nodeSelector.cel",
        ),
        id="no-pool-fits",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_a_fault_keeps_what_runs_and_names_the_input(case: Case) -> None:
    world = World()
    before = copy.deepcopy(world.observed)
    case.fault(world)
    got = _run(world)
    desired = _desired(got)
    for key in ("replica-0", "endpoint-0", "replica-1", "endpoint-1"):
        assert desired[key]["spec"] == before[key]["spec"], key
    assert desired["replica-0"]["metadata"]["labels"]["modelplane.ai/revision"] == REVISION
    assert sorted(desired) == sorted(before)
    scheduled = _scheduled(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_FALSE", case.reason)
    assert case.names in scheduled["message"]
    assert any(case.names in w and "llm-0" in w for w in _warnings(got))


def test_a_cluster_being_deleted_moves_its_replica_as_progress_and_says_why() -> None:
    """Deleting a cluster is the user's act, like a drain: Scheduled stays True, an event names the cluster."""
    world = World()
    before = copy.deepcopy(world.observed)
    _delete_east(world)
    got = _run(world)
    desired = _desired(got)
    for key in before:
        assert desired[key]["spec"] == before[key]["spec"], key
    assert desired["replica-2"]["spec"]["inferenceClusterRef"] == {"name": "south"}
    scheduled = _scheduled(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_TRUE", "Scheduled")
    assert "1 leaving: llm-0" in scheduled["message"]
    assert not _warnings(got)
    normal = [r["message"] for r in got["results"] if r["severity"] == "SEVERITY_NORMAL"]
    assert normal == ["moving elsewhere a wave at a time: llm-0 (InferenceCluster east is being deleted)"]


def test_a_cluster_being_deleted_whose_replica_cannot_move_says_why() -> None:
    world = World()
    world.clusters = [c for c in world.clusters if c["metadata"]["name"] != "south"]
    _delete_east(world)
    got = _run(world)
    assert "replica-0" in _desired(got)
    scheduled = _scheduled(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_FALSE", "InsufficientCapacity")
    assert any("not every replica could be scheduled" in w for w in _warnings(got))
    assert any("InferenceCluster east is being deleted" in r["message"] for r in got["results"])


def test_the_replacement_of_a_replica_on_a_deleted_cluster_retires_it_once_ready() -> None:
    world = World()
    _delete_east(world)
    replacement = _desired(_run(world))["replica-2"]
    assert replacement["spec"]["inferenceClusterRef"] == {"name": "south"}
    world.observed |= {"replica-2": _replica(2, "south", ready=False)}
    assert "replica-0" in _desired(_run(world))
    world.observed |= {"replica-2": _replica(2, "south")}
    got = _run(world)
    assert sorted(_desired(got)) == ["endpoint-1", "endpoint-2", "replica-1", "replica-2"]
    assert _scheduled(got)["status"] == "STATUS_CONDITION_TRUE"
    assert [r["message"] for r in got["results"] if r["severity"] == "SEVERITY_NORMAL"] == [
        "retired llm-0: its InferenceCluster is being deleted and enough replicas are Ready without it"
    ]


@pytest.mark.parametrize(
    "replicas",
    [pytest.param([], id="empty"), pytest.param(None, id="as-observed"), pytest.param("others", id="omits-own")],
)
def test_what_runs_comes_from_the_observed_composed_resources(replicas: list[dict[str, Any]] | str | None) -> None:
    world = World()
    other = _replica(0, "south")
    other["metadata"]["name"] = "other-0"
    other["spec"]["deploymentRef"] = {"name": "other"}
    world.replicas = [other] if replicas == "others" else replicas  # type: ignore[assignment]
    if replicas == "others":
        # Another deployment's replica is counted by its cluster, which publishes its pool full.
        _cluster_named(world, "south")["status"]["capacity"] = {
            "pools": [{"name": "gpu", "devicesPerNode": 8, "nodesByFree": {"0": 1}, "replicas": ["ml/other-0"]}]
        }
    world.xr = _xr(replicas=3)
    got = _run(world)
    desired = _desired(got)
    assert desired["replica-0"]["spec"]["inferenceClusterRef"] == {"name": "east"}
    assert desired["replica-1"]["spec"]["inferenceClusterRef"] == {"name": "west"}
    # The observed replicas hold their nodes: the third lands on south unless its cluster says it is full.
    if replicas == "others":
        assert "replica-2" not in desired
        assert _scheduled(got)["reason"] == "InsufficientCapacity"
    else:
        assert desired["replica-2"]["spec"]["inferenceClusterRef"] == {"name": "south"}


def test_a_replica_that_turns_unready_keeps_its_endpoint_without_traffic() -> None:
    world = World()
    world.observed["replica-0"] = _replica(0, "east", ready=False)
    got = _run(world)
    desired = _desired(got)
    assert desired["endpoint-0"]["spec"] == world.observed["endpoint-0"]["spec"]
    assert desired["endpoint-0"]["metadata"]["annotations"] == {"modelplane.ai/serving": "false"}
    assert got["desired"]["resources"]["endpoint-0"]["ready"] == "READY_FALSE"
    assert "annotations" not in desired["endpoint-1"]["metadata"]
    assert got["desired"]["composite"]["ready"] == "READY_FALSE"


def test_a_composed_replica_that_cannot_be_read_is_kept_as_it_is() -> None:
    world = World()
    world.observed["replica-0"]["spec"]["workers"] = "eight"
    got = _run(world)
    desired = _desired(got)
    assert desired["replica-0"]["spec"] == world.observed["replica-0"]["spec"]
    assert desired["endpoint-0"]["spec"] == world.observed["endpoint-0"]["spec"]
    assert _scheduled(got)["reason"] == "ReplicaUnreadable"
    assert any("replica-0" in w for w in _warnings(got))


def test_a_change_that_runs_surges_a_replica_of_its_revision_first() -> None:
    world = World()
    image = Shape(tensor=8, template={"spec": {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.12.0"}]}})
    world.xr = _xr(shape=image)
    got = _run(world)
    desired = _desired(got)
    # The running replicas keep their shape and revision; one replica of the new revision is placed beside them.
    assert desired["replica-0"]["spec"]["workers"]["template"] != image.workers()["template"]
    assert desired["replica-0"]["metadata"]["labels"]["modelplane.ai/revision"] == REVISION
    assert desired["replica-2"]["spec"]["workers"]["template"] == image.workers()["template"]
    revision = desired["replica-2"]["metadata"]["labels"]["modelplane.ai/revision"]
    assert revision == shape_revision(serving_shape(world.xr["spec"])) != REVISION
    assert _scheduled(got)["status"] == "STATUS_CONDITION_TRUE"


def test_scaling_down_waits_while_a_replica_cannot_be_verified() -> None:
    world = World()
    _malform_east(world)
    world.xr = _xr(replicas=1)
    got = _run(world)
    assert sorted(_desired(got)) == ["endpoint-0", "endpoint-1", "replica-0", "replica-1"]
    scheduled = _scheduled(got)
    assert scheduled["reason"] == "ClusterUnreadable"
    assert "scaling down to 1 waits until every replica's inputs can be read" in scheduled["message"]


def test_a_replica_its_cluster_finds_overcommitted_moves_and_says_so() -> None:
    # llm-1 was placed on west concurrently with another deployment's replica that took its node: west
    # lists it as overcommitted. Not serving yet, it moves to south, and an event says why.
    world = World()
    world.observed["replica-1"] = _replica(1, "west", ready=False)
    _cluster_named(world, "west")["status"]["capacity"] = {
        "pools": [{"name": "gpu", "devicesPerNode": 8, "nodesByFree": {"0": 1}, "replicas": ["ml/other-0"]}],
        "overcommitted": ["ml/llm-1"],
    }
    got = _run(world)
    desired = _desired(got)
    assert desired["replica-0"]["spec"]["inferenceClusterRef"] == {"name": "east"}
    assert desired["replica-1"]["spec"]["inferenceClusterRef"] == {"name": "south"}
    assert [r["message"] for r in got["results"] if r["severity"] == "SEVERITY_NORMAL"] == [
        "moved llm-1 from InferenceCluster west to south: west found it placed concurrently beyond its capacity,"
        " and it was not serving yet"
    ]


def test_a_serving_replica_is_never_moved_for_a_cluster_overcommitted() -> None:
    world = World()
    _cluster_named(world, "west")["status"]["capacity"] = {"overcommitted": ["ml/llm-1"]}
    desired = _desired(_run(world))
    assert desired["replica-1"]["spec"]["inferenceClusterRef"] == {"name": "west"}
