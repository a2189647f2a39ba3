"""compose-model-replica: its ModelCache's copy, mounted in every pod, waited for, and never withdrawn.

Rules a user checks: with the copy Ready on the replica's cluster every pod of every role (prefill
and decode, each pod of a multi-node worker, init containers too) mounts the cache's claim read-only
at the mount path, on every backend, and the objects validate against the real CRDs; with policy
Required a replica not started yet composes nothing until the copy is Ready (Deployed False,
CacheNotReady, naming the cache and the cluster); a replica already running keeps its pods exactly
as they are whatever becomes of the cache.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from compose_model_replica.fn import FunctionRunner
from modelplane.backends.pods import SHM_PATH
from tests.functions.replica_fixtures import NAMESPACE, cluster, condition_of, gpu_class, replica, request, warnings_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validation"))
import xrds

SHAPES = ("single-gpu", "tp8-pp2", "5p3d")
BACKENDS = ("KServe", "Native")
PATH = "/models/llama-weights"
CLAIM = "model-cache-llama-weights"
VOLUME = {"name": "model-cache", "persistentVolumeClaim": {"claimName": CLAIM, "readOnly": True}}
MOUNT = {"name": "model-cache", "mountPath": PATH, "readOnly": True}
SHM = {"name": "dshm", "mountPath": SHM_PATH}
INIT = {"name": "check", "image": "busybox:1.36", "command": ["sh", "-c", f"test -f {PATH}/config.json"]}


def _cache(phase: str | None, *, claim: str = CLAIM) -> dict[str, Any]:
    """The ModelCache llama-weights with a copy on east in ``phase`` (None: no copy listed)."""
    status: dict[str, Any] = {"ready": int(phase == "Ready")}
    if claim:
        status["claimName"] = claim
    if phase is not None:
        status["clusters"] = [{"name": "east", "phase": phase, "message": f"hydration Job is {phase.lower()}"}]
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": "llama-weights", "namespace": NAMESPACE},
        "spec": {"source": {"huggingFace": {"repo": "meta-llama/Llama-3.1-8B"}}, "size": "20Gi"},
        "status": status,
    }


def _replica(shape: str = "single-gpu", *, policy: str = "Required", init: bool = False) -> dict[str, Any]:
    xr = replica(shape)
    xr["spec"]["modelCache"] = {"name": "llama-weights", "mountPath": PATH, "policy": policy}
    if init:
        for block in [xr["spec"]] if "workers" in xr["spec"] else [xr["spec"]["prefill"], xr["spec"]["decode"]]:
            block["workers"]["template"]["spec"]["initContainers"] = [copy.deepcopy(INIT)]
    return xr


def _run(
    xr: dict[str, Any],
    cache: dict[str, Any] | None,
    *,
    backend: str = "Native",
    observed: dict[str, dict[str, Any]] | None = None,
    fetched: bool = True,
) -> dict[str, Any]:
    req = request(xr, cluster_body=cluster(backend=backend), classes=(gpu_class(),), observed=observed)
    if fetched:
        req.required_resources["cache"].SetInParent()
        if cache is not None:
            req.required_resources["cache"].items.add().resource.update(cache)
    rsp = asyncio.run(FunctionRunner().RunFunction(req, None))
    out: dict[str, Any] = json_format.MessageToDict(rsp)
    return out


def _objects(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: r["resource"] for k, r in out.get("desired", {}).get("resources", {}).items()}


def _pods(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every PodSpec of the workloads, by where it is."""
    pods: dict[str, dict[str, Any]] = {}
    for obj in _objects(out).values():
        if obj["kind"] != "Object":
            continue
        m = obj["spec"]["forProvider"]["manifest"]
        spec = m.get("spec") or {}
        if m["kind"] == "Deployment":
            pods[m["metadata"]["name"]] = spec["template"]["spec"]
        elif m["kind"] == "LeaderWorkerSet":
            pods[m["metadata"]["name"]] = spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]
        elif m["kind"] == "LLMInferenceService":
            for role, block in (("serving", spec), ("prefill", spec.get("prefill") or {})):
                pods |= {f"{role}/{k}": block[k] for k in ("template", "worker") if k in block}
    return pods


def _as_observed(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What a call composed, as the next call observes it."""
    return _objects(out)


MATRIX = [pytest.param(s, b, id=f"{s}-{b}") for s in SHAPES for b in BACKENDS]


@pytest.mark.parametrize(("shape", "backend"), MATRIX)
def test_a_ready_copy_is_mounted_read_only_in_every_pod_of_every_role(shape: str, backend: str) -> None:
    xr = _replica(shape, init=True)
    assert xrds.validate(xr).errors == ()
    out = _run(xr, _cache("Ready"), backend=backend)
    assert warnings_of(out) == []
    for obj in _objects(out).values():
        if obj["kind"] == "Object":
            manifest = obj["spec"]["forProvider"]["manifest"]
            assert xrds.validate(manifest).errors == (), (manifest["kind"], xrds.validate(manifest).errors)
    pods = _pods(out)
    assert pods, "the workloads are composed"
    for where, pod in pods.items():
        assert [v for v in pod["volumes"] if v["name"] == "model-cache"] == [VOLUME], where
        for container in [*pod["containers"], *pod["initContainers"]]:
            assert container["volumeMounts"][:2] == [SHM, MOUNT], (where, container["name"])


@pytest.mark.parametrize(
    ("cache", "want"),
    [
        pytest.param(
            _cache("Hydrating"),
            "waiting for the weights: ModelCache llama-weights's copy on east is Hydrating: hydration Job is hydrating",
            id="hydrating",
        ),
        pytest.param(
            _cache(None), "waiting for the weights: ModelCache llama-weights's copy on east is Pending", id="not-listed"
        ),
        pytest.param(
            _cache("Failed"),
            "waiting for the weights: ModelCache llama-weights's copy on east is Failed: hydration Job is failed",
            id="failed",
        ),
        pytest.param(
            None, "waiting for the weights: spec.modelCache.name: ModelCache llama-weights not found", id="missing"
        ),
    ],
)
def test_required_waits_composing_nothing_until_the_copy_is_ready(cache: dict[str, Any] | None, want: str) -> None:
    out = _run(_replica(), cache)
    assert _objects(out) == {}
    deployed = condition_of(out, "Deployed")
    assert (deployed["status"], deployed["reason"], deployed["message"]) == (
        "STATUS_CONDITION_FALSE",
        "CacheNotReady",
        want,
    )
    assert condition_of(out, "Serving")["reason"] == "CacheNotReady"
    assert out["desired"]["composite"].get("ready") == "READY_FALSE"


def test_a_replica_waits_while_the_cache_is_not_fetched_yet() -> None:
    out = _run(_replica(), None, fetched=False)
    assert out["requirements"]["resources"]["cache"]["matchName"] == "llama-weights"
    assert condition_of(out, "Deployed")["status"] == "STATUS_CONDITION_UNKNOWN"
    assert _objects(out) == {}


@pytest.mark.parametrize(
    "later",
    [
        pytest.param(_cache("Hydrating"), id="copy-hydrating-again"),
        pytest.param(_cache("Failed"), id="copy-failed"),
        pytest.param(_cache(None), id="cluster-dropped-from-status"),
        pytest.param(None, id="cache-deleted"),
    ],
)
@pytest.mark.parametrize("policy", ["Required", "Preferred"])
def test_a_running_replica_keeps_its_mount_whatever_becomes_of_the_cache(
    later: dict[str, Any] | None, policy: str
) -> None:
    xr = _replica(policy=policy)
    first = _run(xr, _cache("Ready"))
    again = _run(xr, later, observed=_as_observed(first))
    assert _pods(again) == _pods(first)
    assert condition_of(again, "Deployed")["reason"] != "CacheNotReady"


def test_preferred_starts_without_the_copy_and_says_so() -> None:
    out = _run(_replica(policy="Preferred"), _cache("Hydrating"))
    (pod,) = _pods(out).values()
    assert [v["name"] for v in pod["volumes"]] == ["dshm"]
    assert warnings_of(out) == [
        "spec.modelCache: ModelCache llama-weights's copy on east is Hydrating: hydration Job is hydrating:"
        " starting without it (policy Preferred)"
    ]


def test_preferred_started_without_the_copy_is_not_restarted_when_it_becomes_ready() -> None:
    xr = _replica(policy="Preferred")
    first = _run(xr, _cache("Hydrating"))
    again = _run(xr, _cache("Ready"), observed=_as_observed(first))
    assert _pods(again) == _pods(first)


def test_required_composes_once_the_copy_becomes_ready() -> None:
    xr = _replica()
    waiting = _run(xr, _cache("Hydrating"))
    ready = _run(xr, _cache("Ready"), observed=_as_observed(waiting))
    (pod,) = _pods(ready).values()
    assert VOLUME in pod["volumes"]
    assert condition_of(ready, "Deployed")["reason"] != "CacheNotReady"


def test_a_ready_copy_without_a_claim_is_not_mounted_and_says_why() -> None:
    out = _run(_replica(), _cache("Ready", claim=""))
    (pod,) = _pods(out).values()
    assert [v["name"] for v in pod["volumes"]] == ["dshm"]
    assert warnings_of(out) == [
        "spec.modelCache: ModelCache llama-weights has no status.claimName yet: starting without it"
    ]
