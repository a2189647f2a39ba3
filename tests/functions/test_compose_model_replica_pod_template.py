"""compose-model-replica: the pod template's volumes, mounts, init containers, security, priority and affinity.

Rules a user checks on the workload cluster: each field reaches every pod of every role
(the leader and the other nodes of a multi-node worker, prefill and decode) on every
backend, merged with what Modelplane adds (/dev/shm, the pool's nodeSelector), and the
composed objects still validate against the real CRDs and the Kubernetes OpenAPI.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from pathlib import Path
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_replica.fn import FunctionRunner
from modelplane.backends.pods import SHM_PATH
from tests.functions.replica_fixtures import cluster, gpu_class, replica, request

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validation"))
import xrds

SHAPES = ("single-gpu", "tp8-pp2", "5p3d")
BACKENDS = ("KServe", "Native")
POOL = "modelplane.ai/pool"
SHM = {"name": "dshm", "mountPath": SHM_PATH}

WEIGHTS = {"name": "weights", "persistentVolumeClaim": {"claimName": "llama-weights", "readOnly": True}}
SCRATCH = {"name": "scratch", "emptyDir": {"sizeLimit": "200Gi"}}
WEIGHTS_MOUNT = {"name": "weights", "mountPath": "/models/llama", "readOnly": True}
INIT = {
    "name": "check-weights",
    "image": "busybox:1.36",
    "command": ["sh", "-c", "test -f /models/llama/config.json"],
    "volumeMounts": [WEIGHTS_MOUNT],
    "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False},
}
POD_SECURITY = {"runAsUser": 1000, "runAsNonRoot": True, "fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]}}
# A user's required node term on another label: the Kubernetes scheduler ANDs it with the pool's nodeSelector.
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "example.com/rack", "operator": "In", "values": ["a"]}]}
            ]
        }
    },
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 50,
                "podAffinityTerm": {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"team": "research"}},
                },
            }
        ]
    },
}


def _with_fields(xr: dict[str, Any]) -> dict[str, Any]:
    """``xr`` with every new pod-template field set in every role's template."""
    out = copy.deepcopy(xr)
    blocks = [out["spec"]] if "workers" in out["spec"] else [out["spec"]["prefill"], out["spec"]["decode"]]
    for block in blocks:
        spec = block["workers"]["template"]["spec"]
        spec["volumes"] = [copy.deepcopy(WEIGHTS), copy.deepcopy(SCRATCH)]
        spec["initContainers"] = [copy.deepcopy(INIT)]
        spec["securityContext"] = copy.deepcopy(POD_SECURITY)
        spec["priorityClassName"] = "inference-high"
        spec["affinity"] = copy.deepcopy(AFFINITY)
        engine = spec["containers"][0]
        engine["volumeMounts"] = [copy.deepcopy(WEIGHTS_MOUNT), {"name": "scratch", "mountPath": "/scratch"}]
        engine["securityContext"] = copy.deepcopy(CONTAINER_SECURITY)
    return out


def _manifests(req: fnv1.RunFunctionRequest) -> list[dict[str, Any]]:
    rsp = asyncio.run(FunctionRunner().RunFunction(req, None))
    out = json_format.MessageToDict(rsp)
    assert [r for r in out.get("results", []) if r.get("severity") != "SEVERITY_NORMAL"] == []
    resources = out["desired"]["resources"].values()
    return [
        _ints(r["resource"]["spec"]["forProvider"]["manifest"]) for r in resources if r["resource"]["kind"] == "Object"
    ]


def _ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _pods(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every PodSpec of the workloads, by where it is (workload/role/leader or worker)."""
    out: dict[str, dict[str, Any]] = {}
    for m in manifests:
        spec = m.get("spec") or {}
        if m["kind"] == "Deployment":
            out[f"{m['metadata']['name']}/template"] = spec["template"]["spec"]
        elif m["kind"] == "LeaderWorkerSet":
            lws = spec["leaderWorkerTemplate"]
            # One workerTemplate and no leaderTemplate: the leader runs the worker's pod spec.
            assert "leaderTemplate" not in lws
            out[f"{m['metadata']['name']}/leader-and-workers"] = lws["workerTemplate"]["spec"]
        elif m["kind"] == "LLMInferenceService":
            for role, block in (("serving", spec), ("prefill", spec.get("prefill") or {})):
                out |= {f"{role}/{k}": block[k] for k in ("template", "worker") if k in block}
    return out


MATRIX = [pytest.param(s, b, id=f"{s}-{b}") for s in SHAPES for b in BACKENDS]
# Per shape: the pod specs a backend writes (multi-node workers: LWS's shared template, KServe's template and worker).
WANT_PODS = {
    ("single-gpu", "Native"): 1,
    ("single-gpu", "KServe"): 1,
    ("tp8-pp2", "Native"): 1,
    ("tp8-pp2", "KServe"): 2,
    ("5p3d", "Native"): 2,
    ("5p3d", "KServe"): 2,
}


@pytest.mark.parametrize(("shape", "backend"), MATRIX)
def test_every_field_reaches_every_pod_of_every_role(shape: str, backend: str) -> None:
    xr = _with_fields(replica(shape))
    assert xrds.validate(xr).errors == ()
    manifests = _manifests(request(xr, cluster_body=cluster(backend=backend), classes=(gpu_class(),)))
    for m in manifests:
        assert xrds.validate(m).errors == (), (m["kind"], xrds.validate(m).errors)
    pods = _pods(manifests)
    assert len(pods) == WANT_PODS[shape, backend]
    for where, pod in pods.items():
        assert pod["volumes"][0]["name"] == "dshm", where
        assert pod["volumes"][1:] == [WEIGHTS, SCRATCH], where
        assert pod["securityContext"] == POD_SECURITY, where
        assert pod["priorityClassName"] == "inference-high", where
        assert pod["affinity"] == AFFINITY, where
        assert pod["nodeSelector"][POOL] in ("gpu", "gpu-b"), where
        (init,) = pod["initContainers"]
        assert init["volumeMounts"] == [SHM, WEIGHTS_MOUNT], where
        assert "resources" not in init, f"{where}: an init container claims no accelerators"
        engine = pod["containers"][0]
        assert engine["volumeMounts"] == [SHM, WEIGHTS_MOUNT, {"name": "scratch", "mountPath": "/scratch"}], where
        assert engine["securityContext"] == CONTAINER_SECURITY, where


@pytest.mark.parametrize(
    ("spec", "want_volumes", "want_mounts"),
    [
        pytest.param({}, ["dshm"], [SHM], id="no-user-volumes"),
        pytest.param(
            {"volumes": [SCRATCH], "mounts": [{"name": "scratch", "mountPath": "/scratch"}]},
            ["dshm", "scratch"],
            [SHM, {"name": "scratch", "mountPath": "/scratch"}],
            id="user-volume-after-shm",
        ),
        # Admission refuses these; should one reach the function, Modelplane's /dev/shm still wins.
        pytest.param(
            {"volumes": [{"name": "dshm", "emptyDir": {}}], "mounts": [{"name": "x", "mountPath": SHM_PATH}]},
            ["dshm"],
            [SHM],
            id="reserved-name-and-path-keep-modelplanes",
        ),
    ],
)
def test_user_volumes_merge_after_modelplanes_shared_memory(
    spec: dict[str, Any], want_volumes: list[str], want_mounts: list[dict[str, Any]]
) -> None:
    xr = replica("single-gpu")
    template = xr["spec"]["workers"]["template"]["spec"]
    if "volumes" in spec:
        template["volumes"] = spec["volumes"]
        template["containers"][0]["volumeMounts"] = spec["mounts"]
    (pod,) = _pods(_manifests(request(xr, cluster_body=cluster(backend="Native"), classes=(gpu_class(),)))).values()
    assert [v["name"] for v in pod["volumes"]] == want_volumes
    assert pod["volumes"][0] == {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}
    assert pod["containers"][0]["volumeMounts"] == want_mounts


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_users_affinity_cannot_take_pods_out_of_their_pool(backend: str) -> None:
    # A required node term naming another pool: kept as written, and the pool's nodeSelector, which
    # Kubernetes requires as well, still pins the pods (they would stay Pending, never run elsewhere).
    other_pool = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": POOL, "operator": "In", "values": ["gpu-b"]}]}]
            }
        }
    }
    xr = replica("single-gpu")
    xr["spec"]["workers"]["template"]["spec"]["affinity"] = other_pool
    (pod,) = _pods(_manifests(request(xr, cluster_body=cluster(backend=backend), classes=(gpu_class(),)))).values()
    assert pod["nodeSelector"] == {POOL: "gpu"}
    assert pod["affinity"] == other_pool
