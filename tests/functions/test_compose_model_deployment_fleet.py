"""compose-model-deployment reads the fleet in place exactly as its generated models would.

Every field the reader looks at is set to absent, null, a wrong type, out of
range or off pattern; the outcome (what the object reads as, or the message it
is skipped with) must equal the model path's. Fields the scheduler does not
read (a pod template, the cluster's provisioning) are not validated.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_model_deployment import clusters
from compose_model_deployment.clusters import cluster_facts, model_facts
from compose_model_deployment.fleet import FleetReader
from compose_model_deployment.replicas import occupancy_of
from modelplane.capacity import DeploymentKey, replica_occupancy
from modelplane.fnkit.inputs import Read, read_one
from modelplane.scheduling.view import Published
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

_CONDITIONS = [
    {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
    {"type": "Ready", "status": "False", "reason": "Creating", "message": "waiting for nodes"},
]
_WORKERS = {
    "count": 2,
    "topology": {"tensor": 4, "pipeline": 2, "data": 2, "dataLocal": 1},
    "template": {"spec": {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.11.0"}]}},
}
_SELECTOR = {"cel": 'device.driver == "gpu.nvidia.com"'}

CLUSTER: dict[str, Any] = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceCluster",
    "metadata": {"name": "east", "labels": {"region": "us-east", "tier": "prod"}, "uid": "u1"},
    "spec": {
        "cluster": {"source": "Existing", "existing": {"secretRef": {"namespace": "cs", "name": "east"}}},
        "cordoned": False,
        "nodePools": [
            {"name": "h100", "className": "nvidia-h100-8", "nodeCount": 4},
            {"name": "h200", "className": "nvidia.h200", "nodeCount": 2, "minNodeCount": 1, "maxNodeCount": 6},
        ],
    },
    "status": {
        "conditions": _CONDITIONS,
        "capacity": {
            "pools": [
                {
                    "name": "h100",
                    "className": "nvidia-h100-8",
                    "inUse": 12,
                    "observedInUse": 10,
                    "source": "KAI",
                    "devicesPerNode": 8,
                    "nodesByFree": {"8": 2, "4": 1, "0": 1},
                    "replicas": ["ml/llm-0", "research/mixtral-0"],
                },
                {"name": "h200", "className": "nvidia.h200", "inUse": 3, "source": "Declared"},
            ],
            "overcommitted": ["ml/late-0"],
        },
        # What the scheduler keeps replicas off the cluster for (and what it does not).
        "components": [
            {"name": "scheduler", "mode": "Existing", "ready": False, "neededBy": "All", "message": "not found"},
            {"name": "lws", "mode": "Managed", "ready": True, "version": "0.10.0", "neededBy": "MultiNode"},
        ],
        # A pool taken out of the spec, kept while a replica runs on it: its class counts for quotas.
        "removingPools": [{"name": "old", "className": "nvidia-h100-8", "remaining": 1}],
    },
}

REPLICA: dict[str, Any] = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelReplica",
    "metadata": {"name": "llm-0", "namespace": "ml", "uid": "u2"},
    "spec": {
        "inferenceClusterRef": {"name": "east"},
        "deploymentRef": {"name": "llm"},
        "poolName": "h100",
        "nodeSelector": _SELECTOR,
        "workers": _WORKERS,
    },
    "status": {"conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "True"}]},
}

PD_REPLICA: dict[str, Any] = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelReplica",
    "metadata": {"name": "pd-1", "namespace": "ml"},
    "spec": {
        "inferenceClusterRef": {"name": "east"},
        "deploymentRef": {"name": "pd"},
        "prefill": {"poolName": "h100", "nodeSelector": _SELECTOR, "workers": _WORKERS},
        "decode": {"poolName": "h200", "nodeSelector": _SELECTOR, "workers": {**_WORKERS, "count": 3}},
    },
}

# The fields the reader looks at, as paths; an int indexes a list.
CLUSTER_FIELDS: list[tuple[Any, ...]] = [
    ("metadata",),
    ("metadata", "name"),
    ("metadata", "labels"),
    ("metadata", "labels", "region"),
    ("spec",),
    ("spec", "cordoned"),
    ("spec", "drain"),
    ("spec", "nodePools"),
    *[("spec", "nodePools", i, f) for i in (0, 1) for f in ("name", "className", "nodeCount", "minNodeCount")],
    ("spec", "nodePools", 0),
    ("spec", "nodePools", 1, "maxNodeCount"),
    ("status",),
    ("status", "conditions"),
    ("status", "conditions", 0),
    ("status", "conditions", 0, "type"),
    *[("status", "conditions", 1, f) for f in ("type", "status", "reason", "message", "lastTransitionTime")],
    ("status", "capacity"),
    ("status", "capacity", "pools"),
    ("status", "capacity", "pools", 0),
    *[
        ("status", "capacity", "pools", 0, f)
        for f in ("name", "className", "inUse", "observedInUse", "source", "devicesPerNode", "nodesByFree", "replicas")
    ],
    ("status", "capacity", "pools", 0, "nodesByFree", "8"),
    ("status", "capacity", "pools", 0, "replicas", 0),
    ("status", "capacity", "overcommitted"),
    ("status", "capacity", "overcommitted", 0),
    ("status", "capacity", "pools", 1, "source"),
    ("status", "components"),
    ("status", "components", 0),
    *[("status", "components", 0, f) for f in ("name", "mode", "ready", "neededBy", "message")],
    ("status", "components", 1, "version"),
    ("status", "components", 1, "ready"),
    ("status", "removingPools"),
    ("status", "removingPools", 0),
    *[("status", "removingPools", 0, f) for f in ("name", "className", "remaining")],
]
_ROLE_FIELDS: list[tuple[Any, ...]] = [
    ("workers",),
    ("workers", "count"),
    ("workers", "topology"),
    *[("workers", "topology", f) for f in ("tensor", "pipeline", "data", "dataLocal")],
]
REPLICA_FIELDS: list[tuple[Any, ...]] = [
    ("metadata",),
    ("metadata", "name"),
    ("metadata", "namespace"),
    ("spec",),
    ("spec", "inferenceClusterRef"),
    ("spec", "inferenceClusterRef", "name"),
    ("spec", "deploymentRef"),
    ("spec", "deploymentRef", "name"),
    ("spec", "poolName"),
    ("spec", "prefill"),
    *[("spec", *p) for p in _ROLE_FIELDS],
    ("status",),
    ("status", "conditions"),
    ("status", "conditions", 0),
    ("status", "conditions", 0, "type"),
    ("status", "conditions", 1, "type"),
    ("status", "conditions", 1, "status"),
]
PD_FIELDS: list[tuple[Any, ...]] = [
    ("spec", "workers"),
    *[("spec", role, *p) for role in ("prefill", "decode") for p in [("poolName",), *_ROLE_FIELDS]],
]

_DELETE = object()
VALUES: list[Any] = [
    _DELETE,
    None,
    "",
    "x",
    "Ready",
    "True",
    "KAI",
    "Not-A-Label",
    "ends-",
    "a" * 64,
    "a.b",
    0,
    -1,
    1,
    3,
    2.5,
    1001,
    True,
    False,
    [],
    [{}],
    {},
    {"name": "x"},
]


def _mutated(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    body = copy.deepcopy(base)
    parent: Any = body
    for key in path[:-1]:
        parent = parent[key]
    if value is _DELETE and isinstance(parent, list):
        del parent[path[-1]]
    elif value is _DELETE:
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = value
    return body


def _cases() -> Iterator[Any]:
    for kind, base, paths in (
        ("cluster", CLUSTER, CLUSTER_FIELDS),
        ("replica", REPLICA, REPLICA_FIELDS),
        ("pd-replica", PD_REPLICA, PD_FIELDS),
    ):
        yield pytest.param(kind, base, id=f"{kind}-as-is")
        for path in paths:
            for i, value in enumerate(VALUES):
                if kind == "cluster" and path == ("spec",) and isinstance(value, dict):
                    continue  # a spec without spec.cluster, which is required but not read
                name = ".".join(map(str, path))
                yield pytest.param(kind, _mutated(base, path, value), id=f"{kind}-{name}-{i}")


@pytest.mark.parametrize(("kind", "body"), list(_cases()))
def test_reads_as_the_model_does(kind: str, body: dict[str, Any]) -> None:
    struct = resource.dict_to_struct(body)
    got: Read[Any]
    want: Read[Any]
    if kind == "cluster":
        got = read_one("InferenceCluster", struct, cluster_facts, InferenceCluster, model_facts)
        want = read_one("InferenceCluster", struct, None, InferenceCluster, model_facts)
    else:
        got = read_one("ModelReplica", struct, occupancy_of, ModelReplica, replica_occupancy)
        want = read_one("ModelReplica", struct, None, ModelReplica, replica_occupancy)
    assert got == want


def _request(*replicas: dict[str, Any]) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest()
    for name in ("clusters", "classes", "replicas", "quotas", "priorityclasses"):
        req.required_resources[name].SetInParent()
    for body in replicas:
        req.required_resources["replicas"].items.add().resource.update(body)
    return req


LLM = DeploymentKey("ml", "llm")
PD = DeploymentKey("ml", "pd")


def test_an_unchanged_object_is_read_once() -> None:
    reader = FleetReader()
    versioned = _mutated(REPLICA, ("metadata", "resourceVersion"), "7")
    first = reader.read(_request(versioned), LLM).listed
    again = reader.read(_request(versioned), LLM).listed
    assert first == again
    assert again[0] is first[0]  # same uid and resourceVersion: reused
    unversioned = reader.read(_request(PD_REPLICA), PD).listed
    assert reader.read(_request(PD_REPLICA), PD).listed[0] is not unversioned[0]  # no resourceVersion: read again


def test_a_changed_object_is_read_again() -> None:
    reader = FleetReader()
    before = _mutated(REPLICA, ("metadata", "resourceVersion"), "7")
    after = _mutated(_mutated(before, ("metadata", "resourceVersion"), "8"), ("spec", "poolName"), "h200")
    assert reader.read(_request(before), LLM).listed[0].roles[0].pool == "h100"
    assert reader.read(_request(after), LLM).listed[0].roles[0].pool == "h200"


def _versioned(body: dict[str, Any], uid: str, version: str) -> dict[str, Any]:
    return _mutated(_mutated(body, ("metadata", "uid"), uid), ("metadata", "resourceVersion"), version)


LLM_0 = _versioned(REPLICA, "u-llm", "7")
PD_0 = _versioned(PD_REPLICA, "u-pd", "3")


@pytest.mark.parametrize(
    ("remembered", "between", "reused"),
    [
        pytest.param(8, [PD_0], True, id="another-deployments-call-between"),
        pytest.param(8, [PD_0, PD_0, PD_0], True, id="several-calls-between"),
        pytest.param(2, [PD_0], True, id="kept-in-the-older-generation"),
        pytest.param(
            1, [PD_0, _versioned(PD_REPLICA, "u-pd", "4"), _versioned(PD_REPLICA, "u-pd", "5")], False, id="forgotten"
        ),
    ],
)
def test_a_replica_read_in_an_earlier_call_is_reused_while_remembered(
    remembered: int, between: list[dict[str, Any]], reused: bool
) -> None:
    # Each call lists one deployment's replicas: the previous call's are mostly another deployment's.
    reader = FleetReader(replicas=remembered)
    first = reader.read(_request(LLM_0), LLM).listed
    for body in between:
        reader.read(_request(body), PD)
    again = reader.read(_request(LLM_0), LLM).listed
    assert again == first
    assert (again[0] is first[0]) is reused


def test_the_replicas_remembered_are_bounded() -> None:
    reader = FleetReader(replicas=2)
    for version in range(20):
        reader.read(_request(_versioned(REPLICA, "u-llm", str(version))), LLM)
        remembered = len(reader._previous["replicas"]) + len(reader._older)
        assert remembered <= 2 * 2


def test_a_cluster_is_remembered_from_the_previous_call_only() -> None:
    reader = FleetReader()
    east = _versioned(CLUSTER, "u-east", "1")
    west = _versioned(_mutated(CLUSTER, ("metadata", "name"), "west"), "u-west", "1")

    def clusters(body: dict[str, Any]) -> fnv1.RunFunctionRequest:
        req = _request()
        req.required_resources["clusters"].items.add().resource.update(body)
        return req

    first = reader.read(clusters(east), LLM).view.clusters["east"]
    assert reader.read(clusters(east), LLM).view.clusters["east"] is first
    reader.read(clusters(west), LLM)
    again = reader.read(clusters(east), LLM).view.clusters["east"]
    assert again == first
    assert again is not first  # every call reads every cluster: only the previous call's are kept


_SCHEDULER_LACKING = {"name": "scheduler", "mode": "Existing", "ready": False, "neededBy": "All", "message": "gone"}
_GATEWAY_READY = {"name": "gateway", "mode": "Managed", "ready": True, "neededBy": "All"}


@pytest.mark.parametrize(
    "components",
    [
        pytest.param([[_SCHEDULER_LACKING], [_SCHEDULER_LACKING]], id="unchanged"),
        pytest.param([[_SCHEDULER_LACKING], [_GATEWAY_READY]], id="installed"),
        pytest.param([[_GATEWAY_READY], [_SCHEDULER_LACKING, _GATEWAY_READY], None], id="lacking-then-none"),
        pytest.param([[_GATEWAY_READY], [{**_GATEWAY_READY, "mode": "Sideways"}]], id="then-unclear"),
    ],
)
def test_a_cluster_read_after_others_reads_as_read_afresh(components: list[list[dict[str, Any]] | None]) -> None:
    # A cluster's parts are remembered by their bytes: each reads as a first read does.
    for listed in components:
        body = _mutated(CLUSTER, ("status", "components"), listed)
        got = read_one("InferenceCluster", resource.dict_to_struct(body), cluster_facts, InferenceCluster, model_facts)
        clusters.forget()
        assert got == read_one(
            "InferenceCluster", resource.dict_to_struct(body), cluster_facts, InferenceCluster, model_facts
        )


def test_only_its_own_replicas_in_its_namespace_are_listed() -> None:
    elsewhere = _mutated(REPLICA, ("metadata", "namespace"), "other")
    got = FleetReader().read(_request(REPLICA, PD_REPLICA, elsewhere), LLM).listed
    assert [(h.namespace, h.name) for h in got] == [("ml", "llm-0")]


def test_a_cluster_reads_with_what_it_publishes() -> None:
    read = read_one("InferenceCluster", resource.dict_to_struct(CLUSTER), cluster_facts, InferenceCluster, model_facts)
    assert read.value is not None
    # h100 publishes its free GPUs per node; h200 publishes none yet (read as declared by the view).
    assert read.value.published == {
        "h100": Published(8, (1, 0, 0, 0, 1, 0, 0, 0, 2), frozenset({"ml/llm-0", "research/mixtral-0"}))
    }
    assert read.value.overcommitted == {"ml/late-0"}
    assert [(g.component, g.mode, str(g.needed_by), g.why) for g in read.value.info.lacking] == [
        ("scheduler", "Existing", "All", "not found")
    ]
