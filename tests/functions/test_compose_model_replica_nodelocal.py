"""compose-model-replica with a NodeLocal ModelCache: KServe serves the node-local copy, nothing is mounted.

Rules a user checks: with the copy Ready on a KServe cluster the replica's LLMInferenceService has
``spec.model.uri`` equal to the ``sourceModelUri`` of the LocalModelCache compose-model-cache composes
for the same cache (for every source KServe's node-local copies read), its pods get no volume or
mount of the cache, the engine's args point at /mnt/models (where KServe mounts the copy), and the
object validates against the real CRD; Required waits and Preferred starts without it exactly as with
a PVC cache; a running replica keeps the URI it was composed with; on a cluster that does not serve
with KServe the replica never uses the cache and says so naming spec.modelCacheRef.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from pathlib import Path
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_cache.fn import FunctionRunner as CacheRunner
from compose_model_replica.fn import FunctionRunner
from modelplane.backends.pods import SHM_PATH
from modelplane.modelcache.nodelocal import SERVED_PATH
from tests.functions.replica_fixtures import NAMESPACE, cluster, condition_of, gpu_class, replica, request, warnings_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validation"))
import xrds  # isort: skip

SHAPES = ("single-gpu", "tp8-pp2", "5p3d")
MOUNT_PATH = "/models/llama-weights"  # spec.modelCache.mountPath: NodeLocal mounts nothing there
ENGINE_ARGS = [f"--model={SERVED_PATH}", "--served-model-name=llama-weights"]

# Every source kind KServe's node-local copies read (an OCI image is refused at admission).
SOURCES = [
    pytest.param(
        {"huggingFace": {"repo": "meta-llama/Llama-3.1-8B-Instruct", "revision": "0e9e39f"}},
        "hf://meta-llama/Llama-3.1-8B-Instruct:0e9e39f",
        id="hf-revision",
    ),
    pytest.param(
        {"huggingFace": {"repo": "meta-llama/Llama-3.1-8B-Instruct", "tokenSecretRef": {"name": "hf"}}},
        "hf://meta-llama/Llama-3.1-8B-Instruct",
        id="hf",
    ),
    pytest.param(
        {"s3": {"uri": "s3://models-example/meta-llama/Llama-3.1-8B-Instruct/", "region": "us-east-1"}},
        "s3://models-example/meta-llama/Llama-3.1-8B-Instruct/",
        id="s3",
    ),
    pytest.param(
        {"http": {"url": "https://models.example.com/llama/model.safetensors"}},
        "https://models.example.com/llama/model.safetensors",
        id="https",
    ),
    pytest.param(
        {"http": {"url": "http://mirror.internal/llama/weights.tar"}},
        "http://mirror.internal/llama/weights.tar",
        id="http",
    ),
]
_HF = {"huggingFace": {"repo": "meta-llama/Llama-3.1-8B-Instruct", "revision": "0e9e39f"}}


def _cache(phase: str | None, *, source: dict[str, Any] | None = None) -> dict[str, Any]:
    """The NodeLocal ModelCache llama-weights with a copy on east in ``phase`` (None: no copy listed)."""
    status: dict[str, Any] = {"ready": int(phase == "Ready")}
    if phase is not None:
        status["clusters"] = [{"name": "east", "phase": phase, "message": f"node copies {phase.lower()}"}]
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": "llama-weights", "namespace": NAMESPACE},
        "spec": {"source": source or _HF, "size": "20Gi", "storage": {"type": "NodeLocal"}},
        "status": status,
    }


def _replica(shape: str = "single-gpu", *, policy: str = "Required") -> dict[str, Any]:
    xr = replica(shape)
    xr["spec"]["modelCache"] = {"name": "llama-weights", "mountPath": MOUNT_PATH, "policy": policy}
    for block in [xr["spec"]] if "workers" in xr["spec"] else [xr["spec"]["prefill"], xr["spec"]["decode"]]:
        block["workers"]["template"]["spec"]["containers"][0]["args"] = list(ENGINE_ARGS)
    return xr


def _run(
    xr: dict[str, Any],
    cache: dict[str, Any] | None,
    *,
    backend: str = "KServe",
    observed: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    req = request(xr, cluster_body=cluster(backend=backend), classes=(gpu_class(),), observed=observed)
    req.required_resources["cache"].SetInParent()
    if cache is not None:
        req.required_resources["cache"].items.add().resource.update(cache)
    out: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    return out


def _composed_source_uri(cache: dict[str, Any]) -> str:
    """The sourceModelUri of the LocalModelCache compose-model-cache composes for ``cache`` on east."""
    east = cluster(backend="KServe")
    east["spec"]["serving"] = {"backend": "KServe"}
    user = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": "llm-0", "namespace": NAMESPACE, "labels": {"modelplane.ai/model-cache": "llama-weights"}},
        "spec": {"inferenceClusterRef": {"name": "east"}},
    }
    body = {k: v for k, v in cache.items() if k != "status"}
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(body))),
    )
    for name, items in (("clusters", [east]), ("replicas", [user])):
        req.required_resources[name].SetInParent()
        for item in items:
            req.required_resources[name].items.add().resource.update(item)
    got = json_format.MessageToDict(asyncio.run(CacheRunner().RunFunction(req, None)))
    manifest = got["desired"]["resources"]["east.localmodelcache"]["resource"]["spec"]["forProvider"]["manifest"]
    uri: str = manifest["spec"]["sourceModelUri"]
    return uri


def _manifests(out: dict[str, Any]) -> list[dict[str, Any]]:
    objects = [r["resource"] for r in out.get("desired", {}).get("resources", {}).values()]
    return [o["spec"]["forProvider"]["manifest"] for o in objects if o["kind"] == "Object"]


def _service(out: dict[str, Any]) -> dict[str, Any]:
    (service,) = [m for m in _manifests(out) if m["kind"] == "LLMInferenceService"]
    return service


def _pods(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = _service(out)["spec"]
    pods: dict[str, dict[str, Any]] = {}
    for role, block in (("serving", spec), ("prefill", spec.get("prefill") or {})):
        pods |= {f"{role}/{k}": block[k] for k in ("template", "worker") if k in block}
    return pods


def _as_observed(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: r["resource"] for k, r in out.get("desired", {}).get("resources", {}).items()}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("source", "uri"), SOURCES)
def test_a_ready_node_local_copy_is_served_by_kserve_at_the_local_model_cache_uri(
    source: dict[str, Any], uri: str, shape: str
) -> None:
    cache = _cache("Ready", source=source)
    assert xrds.validate({k: v for k, v in cache.items() if k != "status"}).errors == ()
    out = _run(_replica(shape), cache)
    assert warnings_of(out) == []
    service = _service(out)
    # Exactly what the LocalModelCache holds, or KServe downloads the weights again.
    assert service["spec"]["model"] == {"uri": uri}
    assert service["spec"]["model"]["uri"] == _composed_source_uri(cache)
    for manifest in _manifests(out):
        assert xrds.validate(manifest).errors == (), (manifest["kind"], xrds.validate(manifest).errors)
    pods = _pods(out)
    assert pods, "the workloads are composed"
    for where, pod in pods.items():
        # KServe mounts the node-local copy itself: Modelplane adds no volume or mount of its own.
        assert [v["name"] for v in pod["volumes"]] == ["dshm"], where
        for container in pod["containers"]:
            assert [m["mountPath"] for m in container["volumeMounts"]] == [SHM_PATH], (where, container["name"])
        assert pod["containers"][0]["args"] == ENGINE_ARGS, where


@pytest.mark.parametrize(
    ("cache", "want"),
    [
        pytest.param(
            _cache("Hydrating"),
            "waiting for the weights: ModelCache llama-weights's copy on east is Hydrating: node copies hydrating",
            id="hydrating",
        ),
        pytest.param(
            _cache(None), "waiting for the weights: ModelCache llama-weights's copy on east is Pending", id="not-listed"
        ),
        pytest.param(
            _cache("Failed"),
            "waiting for the weights: ModelCache llama-weights's copy on east is Failed: node copies failed",
            id="failed",
        ),
    ],
)
def test_required_waits_for_a_node_local_copy_as_for_a_claim(cache: dict[str, Any], want: str) -> None:
    out = _run(_replica(), cache)
    assert _manifests(out) == []
    deployed = condition_of(out, "Deployed")
    assert (deployed["status"], deployed["reason"], deployed["message"]) == (
        "STATUS_CONDITION_FALSE",
        "CacheNotReady",
        want,
    )
    assert condition_of(out, "Serving")["reason"] == "CacheNotReady"


def test_required_composes_with_the_uri_once_the_node_local_copy_is_ready() -> None:
    xr = _replica()
    waiting = _run(xr, _cache("Hydrating"))
    ready = _run(xr, _cache("Ready"), observed=_as_observed(waiting))
    assert _service(ready)["spec"]["model"] == {"uri": "hf://meta-llama/Llama-3.1-8B-Instruct:0e9e39f"}


def test_preferred_starts_without_the_node_local_copy_and_says_so() -> None:
    out = _run(_replica(policy="Preferred"), _cache("Hydrating"))
    assert "model" not in _service(out)["spec"]
    assert warnings_of(out) == [
        "spec.modelCache: ModelCache llama-weights's copy on east is Hydrating: node copies hydrating:"
        " starting without it (policy Preferred)"
    ]


def _changed_source() -> dict[str, Any]:
    return _cache("Ready", source={"s3": {"uri": "s3://models-example/other/"}})


@pytest.mark.parametrize(
    "later",
    [
        pytest.param(_cache("Hydrating"), id="copy-hydrating-again"),
        pytest.param(_cache("Failed"), id="copy-failed"),
        pytest.param(None, id="cache-deleted"),
        pytest.param(_changed_source(), id="source-changed"),
    ],
)
@pytest.mark.parametrize("policy", ["Required", "Preferred"])
def test_a_running_replica_keeps_its_model_uri_whatever_becomes_of_the_cache(
    later: dict[str, Any] | None, policy: str
) -> None:
    xr = _replica(policy=policy)
    first = _run(xr, _cache("Ready"))
    again = _run(xr, later, observed=_as_observed(first))
    assert _service(again) == _service(first)
    assert condition_of(again, "Deployed")["reason"] != "CacheNotReady"


def test_preferred_started_without_the_copy_gets_no_uri_when_it_becomes_ready() -> None:
    xr = _replica(policy="Preferred")
    first = _run(xr, _cache("Hydrating"))
    again = _run(xr, _cache("Ready"), observed=_as_observed(first))
    assert _service(again) == _service(first)


_NATIVE = (
    "spec.modelCacheRef: ModelCache llama-weights has storage type NodeLocal, which needs a KServe cluster;"
    " InferenceCluster east serves with Native"
)


# The copy's phase as compose-model-cache reports it on a Native cluster (Failed), and a stale Ready.
@pytest.mark.parametrize("phase", ["Failed", "Ready", None])
def test_required_on_a_non_kserve_cluster_waits_naming_the_field(phase: str | None) -> None:
    out = _run(_replica(), _cache(phase), backend="Native")
    assert _manifests(out) == []
    deployed = condition_of(out, "Deployed")
    assert (deployed["status"], deployed["reason"], deployed["message"]) == (
        "STATUS_CONDITION_FALSE",
        "CacheNotReady",
        f"waiting for the weights: {_NATIVE}",
    )


def test_preferred_on_a_non_kserve_cluster_starts_without_it_naming_the_field() -> None:
    out = _run(_replica(policy="Preferred"), _cache("Ready"), backend="Native")
    kinds = {m["kind"] for m in _manifests(out)}
    assert "Deployment" in kinds
    assert "LLMInferenceService" not in kinds
    assert warnings_of(out) == [f"spec.modelCache: {_NATIVE}: starting without it (policy Preferred)"]


def test_a_replica_served_node_local_whose_cluster_turns_native_keeps_what_runs() -> None:
    xr = _replica()
    first = _run(xr, _cache("Ready"))
    again = _run(xr, _cache("Ready"), backend="Native", observed=_as_observed(first))
    assert _as_observed(again) == _as_observed(first)
    deployed = condition_of(again, "Deployed")
    assert (deployed["reason"], deployed["message"]) == (
        "Unsupported",
        "spec.modelCacheRef: a NodeLocal ModelCache needs a KServe cluster; InferenceCluster east serves with Native",
    )


def test_a_node_local_source_kserve_cannot_read_waits_naming_the_field() -> None:
    # Admission refuses an image source with NodeLocal; a cache that slipped through is never served.
    cache = _cache("Ready", source={"oci": {"image": "registry.example.com/llama:1"}})
    out = _run(_replica(), copy.deepcopy(cache))
    assert _manifests(out) == []
    assert condition_of(out, "Deployed")["message"] == (
        "waiting for the weights: spec.modelCacheRef: ModelCache llama-weights's node-local copy cannot be served:"
        " spec.source.oci needs storage type PVC: KServe's node-local copies cannot read an image"
    )
