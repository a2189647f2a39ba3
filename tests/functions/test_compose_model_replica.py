"""compose-model-replica: a replica and its cluster in, provider-kubernetes Objects out, status lifted back."""

from __future__ import annotations

import asyncio
import copy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_replica import fn as replica_fn
from compose_model_replica.fn import FunctionRunner
from modelplane_models.inference_cluster import InferenceCluster
from tests.functions.replica_fixtures import GATEWAY_TLS, NAMESPACE, cluster, gpu_class, replica, request

# The validation harness is imported as its own tests import it (a top-level module beside them).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validation"))
import xrds

SHAPES = ("single-gpu", "tp4", "tp8-pp2", "5p3d")
BACKENDS = ("KServe", "Native")
SCHEDULERS = ("None", "KAI", "Kueue")
# Per shape: role → (workers, nodes per worker, GPUs per node).
FOOTPRINTS = {
    "single-gpu": {"unified": (1, 1, 1)},
    "tp4": {"unified": (1, 1, 4)},
    "tp8-pp2": {"unified": (1, 2, 8)},
    "5p3d": {"prefill": (5, 1, 2), "decode": (3, 1, 4)},
}


def _run(req: fnv1.RunFunctionRequest) -> dict[str, Any]:
    rsp = asyncio.run(FunctionRunner().RunFunction(req, None))
    out: dict[str, Any] = json_format.MessageToDict(rsp)
    return out


def _ints(value: Any) -> Any:
    """Struct numbers come back as floats: make whole ones ints again, as the YAML would have them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _resources(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: _ints(v["resource"]) for k, v in out.get("desired", {}).get("resources", {}).items()}


def _manifests(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: r["spec"]["forProvider"]["manifest"] for k, r in _resources(out).items() if r["kind"] == "Object"}


def _conditions(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in out.get("conditions", [])}


def _pod_specs(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Every PodSpec a workload manifest carries."""
    spec = manifest["spec"]
    kind = manifest["kind"]
    if kind == "Deployment":
        return [spec["template"]["spec"]]
    if kind == "LeaderWorkerSet":
        return [spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]]
    out = []
    for block in (spec, spec.get("prefill") or {}):
        out += [block[k] for k in ("template", "worker") if k in block]
    return out


# The virtual host of the replica the fixtures build (llm-0 in namespace ml).
REPLICA_HOST = "llm-0.ml.replicas.modelplane.ai"
# The virtual host of its deployment's pool (llm in namespace ml), which KServe routes in mode Pool.
POOL_HOST = "llm.ml.pools.modelplane.ai"

MATRIX = [pytest.param(s, b, k, id=f"{s}-{b}-{k}") for s in SHAPES for b in BACKENDS for k in SCHEDULERS]


@pytest.mark.parametrize(("shape", "backend", "scheduler"), MATRIX)
def test_composes_valid_remote_objects(shape: str, backend: str, scheduler: str) -> None:
    xr = replica(shape)
    xr["spec"]["routing"] = {"mode": "Pool"}  # as its deployment writes it (the default)
    req = request(xr, cluster_body=cluster(backend=backend, scheduler=scheduler), classes=(gpu_class(),))
    out = _run(req)
    assert [r for r in out.get("results", []) if r.get("severity") != "SEVERITY_NORMAL"] == []
    resources = _resources(out)
    # Every composed resource and every remote manifest validates against its real schema.
    for key, obj in resources.items():
        assert xrds.validate(obj).errors == (), key
    manifests = _manifests(out)
    for key, manifest in manifests.items():
        assert xrds.validate(manifest).errors == (), (key, xrds.validate(manifest).errors)
    # Every Object reaches the cluster through the ProviderConfig it published.
    assert {r["spec"]["providerConfigRef"]["name"] for r in resources.values()} == {"east"}
    assert {r["metadata"]["namespace"] for r in resources.values()} == {NAMESPACE}

    roles = FOOTPRINTS[shape]
    kinds = sorted(m["kind"] for m in manifests.values())
    claims = {k: m for k, m in manifests.items() if m["kind"] == "ResourceClaimTemplate"}
    assert sorted(claims) == sorted(f"claim-{r}" for r in roles)
    for role, (_, _, gpus) in roles.items():
        (request_,) = claims[f"claim-{role}"]["spec"]["spec"]["devices"]["requests"]
        assert request_["exactly"]["count"] == gpus
        assert request_["exactly"]["deviceClassName"] == "gpu.nvidia.com"

    workloads = [m for m in manifests.values() if m["kind"] in ("Deployment", "LeaderWorkerSet", "LLMInferenceService")]
    if backend == "KServe":
        (svc,) = workloads
        assert svc["kind"] == "LLMInferenceService"
        serving = roles.get("unified") or roles["decode"]
        assert svc["spec"]["replicas"] == serving[0]
        assert ("worker" in svc["spec"]) == (serving[1] > 1)
        assert ("prefill" in svc["spec"]) == ("prefill" in roles)
        if "prefill" in roles:
            assert svc["spec"]["prefill"]["replicas"] == 5
            assert svc["spec"]["prefill"]["parallelism"]["tensor"] == 2
        # Routing mode Pool (the default): the replica joins its deployment's pool on the cluster, whose
        # endpoint picker KServe is given inline, and KServe's route serves the pool's virtual host (and the
        # replica's own, which its own endpoint addresses while the deployment changes routing modes).
        router = svc["spec"]["router"]
        route = router["route"]["http"]["spec"]
        assert route["hostnames"] == [POOL_HOST, f"{svc['metadata']['name']}.ml.replicas.modelplane.ai"]
        assert route["rules"][0]["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
        assert [(b["kind"], b["name"]) for b in route["rules"][0]["backendRefs"]] == [("InferencePool", "llm")]
        assert "filters" not in route["rules"][0]
        assert router["scheduler"]["pool"] == {"ref": {"name": "llm"}}
        inline = router["scheduler"]["config"]["inline"]
        assert inline["kind"] == "EndpointPickerConfig"
        handlers = {p["type"] for p in inline["plugins"]} & {"pd-profile-handler"}
        assert handlers == ({"pd-profile-handler"} if "prefill" in roles else set())
    else:
        assert len(workloads) == len(roles)
        assert kinds.count("Service") == len(roles)
        (route,) = [m for m in manifests.values() if m["kind"] == "HTTPRoute"]
        assert route["spec"]["hostnames"] == [REPLICA_HOST]
        assert route["spec"]["rules"][0]["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
        assert "filters" not in route["spec"]["rules"][0]
        for m in workloads:
            role = m["metadata"]["labels"]["modelplane.ai/role"]
            count, nodes, _ = roles[role]
            assert m["kind"] == ("LeaderWorkerSet" if nodes > 1 else "Deployment")
            assert m["spec"]["replicas"] == count
            if nodes > 1:
                assert m["spec"]["leaderWorkerTemplate"]["size"] == nodes

    for pod in [p for m in workloads for p in _pod_specs(m)]:
        assert pod["nodeSelector"]["modelplane.ai/pool"] in ("gpu", "gpu-b")
        assert pod["resourceClaims"][0]["resourceClaimTemplateName"].startswith("llm-0")
        assert pod["imagePullSecrets"] == [{"name": "registry"}]
        assert pod["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
        assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]
        assert pod.get("schedulerName") == ("kai-scheduler" if scheduler == "KAI" else None)

    pod_groups = {k: m for k, m in manifests.items() if m["kind"] == "PodGroup"}
    if scheduler == "KAI":
        assert {k: m["spec"]["minMember"] for k, m in pod_groups.items()} == {
            f"podgroup-{r}": count * nodes for r, (count, nodes, _) in roles.items()
        }
    else:
        assert pod_groups == {}
    for m in workloads:
        has_queue = "kueue.x-k8s.io/queue-name" in m["metadata"]["labels"]
        assert has_queue == (scheduler == "Kueue")

    gpus = _ints(out["desired"]["composite"]["resource"]["status"]["gpus"])
    assert gpus["total"] == sum(c * n * g for c, n, g in roles.values())


def _observed_object(manifest: dict[str, Any], *, ready: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": "x", "namespace": NAMESPACE},
        "spec": {"forProvider": {"manifest": manifest}},
        "status": {
            "atProvider": {"manifest": manifest},
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "reason": "Available"},
                {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
            ],
        },
    }


def _first_pass(shape: str, backend: str) -> dict[str, dict[str, Any]]:
    req = request(replica(shape), cluster_body=cluster(backend=backend), classes=(gpu_class(),))
    return _resources(_run(req))


def _observed(shape: str, backend: str, status: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every composed Object as observed, the workloads with the given remote status (by key)."""
    out = {}
    for key, obj in _first_pass(shape, backend).items():
        if obj["kind"] != "Object":
            continue
        manifest = copy.deepcopy(obj["spec"]["forProvider"]["manifest"])
        if key in status:
            manifest["status"] = status[key]
        workload = manifest["kind"] in ("Deployment", "LeaderWorkerSet", "LLMInferenceService")
        out[key] = _observed_object(manifest, ready=not workload or (key in status and status[key].get("ok", True)))
    return out


def _pod(
    name: str,
    role: str,
    *,
    ready: bool = True,
    waiting: tuple[str, str] | None = None,
    unschedulable: str = "",
    gates: tuple[str, ...] = (),
) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    status: dict[str, Any] = {"phase": "Running" if ready else "Pending", "conditions": conditions}
    if gates:
        # What the API server writes of a pod created with scheduling gates.
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }
        )
    if unschedulable:
        conditions.append(
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": unschedulable}
        )
    if waiting:
        status["containerStatuses"] = [
            {"name": "main", "ready": False, "state": {"waiting": {"reason": waiting[0], "message": waiting[1]}}}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"modelplane.ai/replica": "llm-0", "modelplane.ai/role": role},
        },
        "spec": {"schedulingGates": [{"name": g} for g in gates]} if gates else {},
        "status": status,
    }


DEPLOYMENT_READY = {
    "readyReplicas": 1,
    "replicas": 1,
    "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}],
}
DEPLOYMENT_WAITING = {
    "replicas": 1,
    "unavailableReplicas": 1,
    "ok": False,
    "conditions": [
        {
            "type": "Available",
            "status": "False",
            "reason": "MinimumReplicasUnavailable",
            "message": "Deployment does not have minimum availability.",
        }
    ],
}
LWS_WAITING = {
    "replicas": 1,
    "readyReplicas": 0,
    "ok": False,
    "conditions": [
        {"type": "Progressing", "status": "True", "reason": "GroupsProgressing", "message": "Replicas are progressing"}
    ],
}
LLMISVC_READY = {"conditions": [{"type": "Ready", "status": "True"}, {"type": "MainWorkloadReady", "status": "True"}]}
LLMISVC_WAITING = {
    "ok": False,
    "conditions": [
        {"type": "Ready", "status": "False", "reason": "MainWorkloadNotReady"},
        {
            "type": "MainWorkloadReady",
            "status": "False",
            "reason": "MinimumReplicasUnavailable",
            "message": "Deployment does not have minimum availability.",
        },
    ],
}
PULL = ("ImagePullBackOff", 'Back-off pulling image "vllm/vllm-openai:v0.11.0"')
NO_NODES = "0/4 nodes are available: 4 Insufficient gpu.nvidia.com. preemption: 0/4 nodes are available."


@dataclass(frozen=True)
class StatusCase:
    id: str
    shape: str
    backend: str
    workloads: dict[str, dict[str, Any]]
    pods: tuple[dict[str, Any], ...] = ()
    want_ready: bool = False
    want_reason: str = ""
    want_in_message: tuple[str, ...] = ()
    want_endpoint: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# Every replica is served at the root of its cluster's gateway, on its own virtual host.
READY_ENDPOINT: dict[str, Any] = {"url": "https://203.0.113.7/", "host": REPLICA_HOST, "tls": GATEWAY_TLS}

STATUS_CASES = [
    StatusCase(
        "ready-native",
        "single-gpu",
        "Native",
        {"workload-unified": DEPLOYMENT_READY},
        (_pod("llm-0-abc", "unified"),),
        want_ready=True,
        want_reason="Available",
        want_endpoint=READY_ENDPOINT,
    ),
    StatusCase(
        "ready-kserve",
        "tp4",
        "KServe",
        {"workload": LLMISVC_READY},
        want_ready=True,
        want_reason="Available",
        want_endpoint=READY_ENDPOINT,
    ),
    StatusCase(
        "image-pull-back-off",
        "single-gpu",
        "Native",
        {"workload-unified": DEPLOYMENT_WAITING},
        (_pod("llm-0-abc", "unified", ready=False, waiting=PULL),),
        want_reason="ImagePullBackOff",
        want_in_message=("0/1 unified pods ready", "Back-off pulling image", "0/1 workers ready"),
    ),
    StatusCase(
        "pending-unschedulable",
        "tp4",
        "KServe",
        {"workload": LLMISVC_WAITING},
        (_pod("llm-0-kserve-abc", "unified", ready=False, unschedulable=NO_NODES),),
        want_reason="Unschedulable",
        want_in_message=("MinimumReplicasUnavailable", "Insufficient gpu"),
    ),
    StatusCase(
        "partially-ready-gang",
        "tp8-pp2",
        "Native",
        {"workload-unified": LWS_WAITING},
        (_pod("llm-0-0", "unified"), _pod("llm-0-0-1", "unified", ready=False, unschedulable=NO_NODES)),
        want_reason="Unschedulable",
        want_in_message=("1/2 unified pods ready", "pod llm-0-0-1", "0/1 workers"),
    ),
    StatusCase(
        "queued-by-kueue",
        "single-gpu",
        "Native",
        {"workload-unified": DEPLOYMENT_WAITING},
        (_pod("llm-0-abc", "unified", ready=False, gates=("kueue.x-k8s.io/admission",)),),
        want_reason="WaitingForAdmission",
        want_in_message=("0/1 unified pods ready", "waiting for Kueue to admit it", "kueue.x-k8s.io/admission"),
    ),
    StatusCase(
        "workload-without-pods",
        "single-gpu",
        "KServe",
        {"workload": LLMISVC_WAITING},
        want_reason="Starting",
        want_in_message=("MainWorkloadReady",),
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in STATUS_CASES])
def test_status_is_lifted_from_observed_objects(case: StatusCase) -> None:
    observed = _observed(case.shape, case.backend, case.workloads)
    req = request(
        replica(case.shape),
        cluster_body=cluster(backend=case.backend),
        classes=(gpu_class(),),
        observed=observed,
        pods=case.pods,
    )
    out = _run(req)
    conditions = _conditions(out)
    assert conditions["Deployed"]["status"] == "STATUS_CONDITION_TRUE"
    serving = conditions["Serving"]
    assert serving["reason"] == case.want_reason
    assert serving["status"] == ("STATUS_CONDITION_TRUE" if case.want_ready else "STATUS_CONDITION_FALSE")
    for text in case.want_in_message:
        assert text in serving["message"]
    composite = out["desired"]["composite"]
    assert composite["ready"] == ("READY_TRUE" if case.want_ready else "READY_FALSE")
    assert composite["resource"]["status"].get("endpoint") == case.want_endpoint
    # The footprint is reported whatever the state (kubectl's GPUS column reads it).
    assert "total" in composite["resource"]["status"]["gpus"], composite["resource"]["status"]


def test_an_object_that_cannot_be_applied_is_reported() -> None:
    observed = _observed("single-gpu", "Native", {})
    observed["claim-unified"]["status"]["conditions"][1] = {
        "type": "Synced",
        "status": "False",
        "reason": "ReconcileError",
        "message": "cannot create object: resourceclaimtemplates.resource.k8s.io is forbidden",
    }
    observed["claim-unified"]["status"].pop("atProvider")
    out = _run(
        request(
            replica("single-gpu"), cluster_body=cluster(backend="Native"), classes=(gpu_class(),), observed=observed
        )
    )
    deployed = _conditions(out)["Deployed"]
    assert deployed["reason"] == "ApplyFailed"
    assert "claim-unified: cannot create object" in deployed["message"]


def _composed() -> dict[str, dict[str, Any]]:
    return _observed("tp4", "Native", {"workload-unified": DEPLOYMENT_READY})


@pytest.mark.parametrize(
    ("name", "kwargs", "reason", "warns"),
    [
        pytest.param("not-fetched", {"fetched": False}, "WaitingForCluster", False, id="cluster-not-fetched-yet"),
        pytest.param("absent", {"cluster_body": None}, "ClusterNotFound", True, id="cluster-not-found"),
        pytest.param(
            "no-status",
            {"cluster_body": cluster(ready=False)},
            "ClusterNotReady",
            True,
            id="cluster-without-provider-config",
        ),
        pytest.param("class-absent", {"classes": ()}, "ClassNotFound", True, id="class-not-found"),
    ],
)
def test_never_drops_what_runs(name: str, kwargs: dict[str, Any], reason: str, warns: bool) -> None:
    observed = _composed()
    args: dict[str, Any] = {"cluster_body": cluster(backend="Native"), "classes": (gpu_class(),), "observed": observed}
    args.update(kwargs)
    req = request(replica("tp4"), **args)
    out = _run(req)
    assert sorted(_resources(out)) == sorted(observed), name
    assert _conditions(out)["Deployed"]["reason"] == reason
    assert any(r["severity"] == "SEVERITY_WARNING" for r in out.get("results", [])) == warns
    assert out["desired"]["composite"]["ready"] == "READY_FALSE"


def test_asks_for_its_cluster_and_the_classes_in_the_first_call() -> None:
    # Everything it reads is asked for at once: the classes its cluster's pools name are among all
    # the classes, so a reconcile takes two calls, not a third once the cluster is read.
    out = _run(request(replica("5p3d"), cluster_body=None, fetched=False))
    requirements = out["requirements"]["resources"]
    assert requirements["cluster"] == {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "matchName": "east",
    }
    assert requirements["classes"] == {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceClass",
        "matchLabels": {},
    }
    assert requirements["pods"]["matchLabels"] == {"labels": {"modelplane.ai/pods-of": "llm-0"}}
    assert _conditions(out)["Deployed"]["reason"] == "WaitingForCluster"


def test_reads_only_the_classes_its_pools_name() -> None:
    other = gpu_class("unrelated")
    other["spec"]["devices"] = "not a list"  # unreadable, and not this replica's concern
    out = _run(request(replica("tp4"), cluster_body=cluster(), classes=(other, gpu_class())))
    assert _conditions(out)["Deployed"]["reason"] != "ClassNotFound"
    assert _resources(out)


def _unreadable_class() -> dict[str, Any]:
    body = gpu_class()
    body["spec"]["devices"] = "not a list"
    return body


def _other_accelerator() -> dict[str, Any]:
    body = gpu_class()
    body["spec"]["devices"][0]["deviceClassName"] = "other.example.com"
    return body


@pytest.mark.parametrize(
    ("first", "then"),
    [
        pytest.param(gpu_class(), gpu_class(), id="unchanged"),
        pytest.param(_unreadable_class(), _unreadable_class(), id="unreadable-each-time"),
        pytest.param(_unreadable_class(), gpu_class(), id="fixed"),
        pytest.param(gpu_class(), _unreadable_class(), id="broken"),
        pytest.param(gpu_class(), _other_accelerator(), id="changed"),
    ],
)
def test_a_class_read_before_reads_as_read_afresh(first: dict[str, Any], then: dict[str, Any]) -> None:
    # Classes are remembered by their exact bytes: a call after another reads as a first call does.
    def call(body: dict[str, Any]) -> dict[str, Any]:
        return _run(request(replica("tp4"), cluster_body=cluster(backend="Native"), classes=(body,)))

    call(first)
    again = call(then)
    replica_fn._CLASSES.clear()
    assert again == call(then)


def test_extra_dra_devices_join_the_claim_and_synthetic_ones_do_not() -> None:
    xr = replica("tp8-pp2")
    xr["spec"]["nodeSelector"]["devices"] = [
        {"name": "rdma", "cel": 'device.driver == "nic.example.com"', "count": 2},
        {"name": "ib", "cel": 'device.driver == "ib.nvidia.com"', "count": 8},
    ]
    out = _run(request(xr, cluster_body=cluster(backend="Native"), classes=(gpu_class(dra_nic=True),)))
    requests = _manifests(out)["claim-unified"]["spec"]["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests] == [
        ("gpu", "gpu.nvidia.com", 8),
        ("rdma", "nic.example.com", 2),
    ]


# --- In-cluster routing and metrics ---


def _with_routing(shape: str, routing: dict[str, Any]) -> dict[str, Any]:
    xr = replica(shape)
    xr["spec"]["routing"] = routing
    return xr


@pytest.mark.parametrize("routing", [None, {"mode": "Replica"}], ids=["unset", "replica"])
def test_kserve_in_mode_replica_keeps_its_own_route_and_no_shared_pool(routing: dict[str, Any] | None) -> None:
    xr = replica("single-gpu") if routing is None else _with_routing("single-gpu", routing)
    manifests = _manifests(_run(request(xr, cluster_body=cluster(), classes=(gpu_class(),))))
    (svc,) = [m for m in manifests.values() if m["kind"] == "LLMInferenceService"]
    router = svc["spec"]["router"]
    assert router["route"]["http"]["spec"]["hostnames"] == [REPLICA_HOST]
    assert "scheduler" not in router


@pytest.mark.parametrize(
    ("shape", "prometheus", "want"),
    [
        pytest.param("single-gpu", "Installed", (8000, None), id="vllm-installed"),
        pytest.param("tp8-pp2", "Managed", (8000, ["1"]), id="multi-node-leader-only"),
        pytest.param("5p3d", "Installed", (8000, None), id="disaggregated-every-role"),
        pytest.param("single-gpu", "None", None, id="none-composes-no-monitor"),
    ],
)
def test_a_replica_monitors_its_engines_where_the_cluster_runs_prometheus(
    shape: str, prometheus: str, want: tuple[int, list[str] | None] | None
) -> None:
    body = cluster(backend="Native")
    body["spec"]["observability"] = {"prometheus": prometheus}
    manifests = _manifests(_run(request(replica(shape), cluster_body=body, classes=(gpu_class(),))))
    monitors = [m for m in manifests.values() if m["kind"] == "PodMonitor"]
    if want is None:
        assert monitors == []
        return
    (monitor,) = monitors
    assert xrds.validate(monitor).errors == ()
    port, followers = want
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert (endpoint["portNumber"], endpoint["path"]) == (port, "/metrics")
    assert {r["targetLabel"]: r["replacement"] for r in endpoint["relabelings"]} == {
        "modelplane_deployment": "llm",
        "modelplane_replica": "llm-0",
        "modelplane_cluster": "east",
    }
    assert monitor["spec"]["selector"]["matchLabels"] == {"modelplane.ai/replica": "llm-0"}
    expressions = monitor["spec"]["selector"].get("matchExpressions")
    assert (expressions[0]["values"] if expressions else None) == followers


def test_an_sglang_engine_without_a_declared_port_is_scraped_on_30000() -> None:
    xr = replica("single-gpu")
    container = xr["spec"]["workers"]["template"]["spec"]["containers"][0]
    container["image"] = "lmsysorg/sglang:v0.5.0"
    del container["ports"]
    body = cluster(backend="Native")
    body["spec"]["observability"] = {"prometheus": "Installed"}
    manifests = _manifests(_run(request(xr, cluster_body=body, classes=(gpu_class(),))))
    (monitor,) = [m for m in manifests.values() if m["kind"] == "PodMonitor"]
    assert monitor["spec"]["podMetricsEndpoints"][0]["portNumber"] == 30000


@pytest.mark.parametrize(
    ("args", "prometheus", "warned"),
    [
        pytest.param(["--model-path=org/model"], "Installed", True, id="sglang-without-the-flag-is-warned"),
        pytest.param(["--enable-metrics", "--model-path=org/model"], "Installed", False, id="sglang-with-the-flag"),
        pytest.param(["--enable-metrics=true"], "Managed", False, id="sglang-with-the-flag-and-a-value"),
        pytest.param(["--model-path=org/model"], "None", False, id="no-monitor-no-warning"),
    ],
)
def test_an_sglang_engine_without_enable_metrics_is_warned_naming_the_field(
    args: list[str], prometheus: str, warned: bool
) -> None:
    xr = replica("single-gpu")
    container = xr["spec"]["workers"]["template"]["spec"]["containers"][0]
    container["image"] = "lmsysorg/sglang:v0.5.0"
    container["args"] = args
    body = cluster(backend="Native")
    body["spec"]["observability"] = {"prometheus": prometheus}
    out = _run(request(xr, cluster_body=body, classes=(gpu_class(),)))
    warnings = [r["message"] for r in out.get("results", []) if r.get("severity") == "SEVERITY_WARNING"]
    flagged = [w for w in warnings if "--enable-metrics" in w]
    assert bool(flagged) == warned
    if warned:
        assert flagged[0].startswith("spec.workers.template.spec.containers[0].args: ")
    # The monitor is composed either way: the warning says what it will find, it does not drop it.
    monitors = [m for m in _manifests(out).values() if m["kind"] == "PodMonitor"]
    assert len(monitors) == (0 if prometheus == "None" else 1)


def test_a_bad_custom_picker_config_on_kserve_keeps_everything_and_names_the_field() -> None:
    routing = {
        "mode": "Pool",
        "endpointPicker": {"profile": "Custom", "config": {"apiVersion": "v1", "kind": "ConfigMap"}},
    }
    out = _run(request(_with_routing("single-gpu", routing), cluster_body=cluster(), classes=(gpu_class(),)))
    deployed = _conditions(out)["Deployed"]
    assert deployed["reason"] == "InvalidSpec"
    assert deployed["message"].startswith("spec.routing.endpointPicker.config: ")
    assert "not an EndpointPickerConfig" in deployed["message"]


@pytest.mark.parametrize(
    ("gateway", "want"),
    [
        pytest.param(
            {"address": "203.0.113.7", "url": "https://203.0.113.7", "tls": GATEWAY_TLS},
            {"url": "https://203.0.113.7/", "tls": GATEWAY_TLS},
            id="https-with-the-cluster-ca",
        ),
        pytest.param(
            {"address": "203.0.113.7", "url": "http://203.0.113.7:8080"},
            {"url": "http://203.0.113.7:8080/"},
            id="http-where-the-cluster-says-so",
        ),
        # A cluster status written before TLS: its gateway served plain HTTP at its address.
        pytest.param({"address": "203.0.113.7"}, {"url": "http://203.0.113.7/"}, id="status-from-before-tls"),
        pytest.param({}, None, id="no-gateway-no-endpoint"),
    ],
)
def test_the_replica_endpoint_is_the_cluster_gateway(gateway: dict[str, Any], want: dict[str, Any] | None) -> None:
    body = cluster()
    body["status"]["gateway"] = gateway
    assert replica_fn._gateway_endpoint(InferenceCluster.model_validate(body)) == want
