"""Builders for the compose-model-batch-run tests: runs, a fleet, a ModelService's objects, what a cluster reports."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_batch_run.fn import FunctionRunner

API = "modelplane.ai/v1alpha1"
HOPPER = 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'
AMPERE = 'device.attributes["gpu.nvidia.com"].architecture == "Ampere"'
T0, T1 = "2026-11-28T02:00:00Z", "2026-11-28T03:10:00Z"


def gpu_class(name: str = "h100", *, per_node: int = 8) -> dict[str, Any]:
    gpu = {
        "name": "gpu",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": per_node,
        "attributes": {"architecture": {"string": "Hopper"}},
        "capacity": {"memory": {"value": "80Gi"}},
    }
    return {"apiVersion": API, "kind": "InferenceClass", "metadata": {"name": name}, "spec": {"devices": [gpu]}}


def cluster(
    name: str,
    *,
    free: Mapping[str, int] | None = None,
    scheduler: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    nodes: int = 2,
    published: bool = True,
    ready: bool = True,
) -> dict[str, Any]:
    """An Existing cluster, one pool ``h100`` of ``nodes`` 8-GPU nodes; ``free`` is its published ``nodesByFree``."""
    spec: dict[str, Any] = {
        "cluster": {
            "source": "Existing",
            "existing": {"secretRef": {"namespace": "crossplane-system", "name": f"{name}-kubeconfig", "key": "k"}},
        },
        "nodePools": [{"name": "h100", "className": "h100", "nodeCount": nodes}],
    }
    if scheduler is not None:
        spec["scheduler"] = dict(scheduler)
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if published:
        status["providerConfigRef"] = {"name": f"{name}-config"}
    if free is not None:
        entry = {"name": "h100", "className": "h100", "devicesPerNode": 8, "nodesByFree": dict(free), "replicas": []}
        status["capacity"] = {"pools": [entry]}
    meta = {"name": name, "labels": dict(labels or {"tier": "batch"})}
    return {"apiVersion": API, "kind": "InferenceCluster", "metadata": meta, "spec": spec, "status": status}


TEMPLATE = {
    "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "args": ["--max-model-len=8192"]}]}
}


def dedicated(**spec: Any) -> dict[str, Any]:
    """A Dedicated run ``nightly`` in ``ml`` (the defaults of the XRD written out, as the API server stores them)."""
    body: dict[str, Any] = {
        "mode": "Dedicated",
        "input": {"uri": "https://data.example.com/batches/in.jsonl"},
        "output": {"uri": "pvc://results/nightly/out.jsonl"},
        "endpoint": "/v1/embeddings",
        "model": "BAAI/bge-m3",
        "nodeSelector": {"cel": HOPPER},
        "workers": {
            "count": 1,
            "topology": {"tensor": 1, "pipeline": 1, "data": 1, "dataLocal": 1},
            "template": TEMPLATE,
        },
        "concurrencyPolicy": "Forbid",
        "history": 3,
        "retries": 3,
    }
    body.update(spec)
    return {
        "apiVersion": API,
        "kind": "ModelBatchRun",
        "metadata": {"name": "nightly", "namespace": "ml"},
        "spec": body,
    }


def via_service(**spec: Any) -> dict[str, Any]:
    """A Service-mode run ``scoring`` in ``ml`` posting to ModelService ``assistant``."""
    body: dict[str, Any] = {
        "mode": "Service",
        "input": {"uri": "s3://evals/set.jsonl", "secretRef": {"name": "aws"}},
        "output": {"uri": "s3://evals/scored.jsonl", "secretRef": {"name": "aws"}},
        "endpoint": "/v1/chat/completions",
        "modelServiceRef": {"name": "assistant"},
        "concurrency": 4,
        "concurrencyPolicy": "Forbid",
        "history": 3,
        "retries": 3,
    }
    body.update(spec)
    return {
        "apiVersion": API,
        "kind": "ModelBatchRun",
        "metadata": {"name": "scoring", "namespace": "ml"},
        "spec": body,
    }


def service(
    endpoints: Sequence[str] = ("llm-0", "llm-1", "llm-2"), *, address: str = "http://gw.example.com/ml/assistant"
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "endpoints": [{"index": 0, "weight": 1, "matched": len(endpoints), "endpoints": list(endpoints)}]
    }
    if address:
        status["address"] = address
    meta = {"name": "assistant", "namespace": "ml"}
    selector = {"matchLabels": {"modelplane.ai/deployment": "llm"}}
    return {
        "apiVersion": API,
        "kind": "ModelService",
        "metadata": meta,
        "spec": {"endpoints": [{"selector": selector}]},
        "status": status,
    }


def endpoint(name: str, *, replica: str = "", cluster_label: str = "", ready: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "labels": {"modelplane.ai/deployment": "llm"}}
    if cluster_label:
        meta["labels"]["modelplane.ai/cluster"] = cluster_label
    spec: dict[str, Any] = {"url": "https://gw.example.com/"}
    if replica:
        spec["replicaRef"] = {"name": replica}
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"apiVersion": API, "kind": "ModelEndpoint", "metadata": meta, "spec": spec, "status": status}


def replica(name: str, on: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ml", "labels": {"modelplane.ai/deployment": "llm"}}
    return {"apiVersion": API, "kind": "ModelReplica", "metadata": meta, "spec": {"inferenceClusterRef": {"name": on}}}


def model_pool(deployment: str, on: str, *, priority: int | None = None) -> dict[str, Any]:
    """The ModelPool of ``deployment`` on cluster ``on`` (named as its pool endpoint, ``<deployment>-<cluster>``)."""
    spec: dict[str, Any] = {
        "deploymentRef": {"name": deployment},
        "inferenceClusterRef": {"name": on},
        "providerConfigRef": {"name": f"{on}-config"},
        "role": "unified",
        "port": 8000,
        "engine": "vLLM",
    }
    if priority is not None:
        spec["priority"] = priority
    labels = {"modelplane.ai/deployment": deployment, "modelplane.ai/cluster": on}
    meta = {"name": f"{deployment}-{on}", "namespace": "ml", "labels": labels}
    return {"apiVersion": API, "kind": "ModelPool", "metadata": meta, "spec": spec}


def model_cache(
    copies: Mapping[str, str], *, name: str = "bge-weights", claim: str = "modelcache-bge-weights", storage: str = "PVC"
) -> dict[str, Any]:
    """ModelCache ``name`` in ``ml`` with its copy's phase on each cluster of ``copies``."""
    spec = {
        "source": {"huggingFace": {"repo": "BAAI/bge-m3"}},
        "size": "4Gi",
        "storage": {"type": storage},
    }
    status: dict[str, Any] = {"clusters": [{"name": c, "phase": p} for c, p in copies.items()]}
    if claim:
        status["claimName"] = claim
    meta = {"name": name, "namespace": "ml"}
    return {"apiVersion": API, "kind": "ModelCache", "metadata": meta, "spec": spec, "status": status}


def other_run(
    name: str, *, cluster_name: str, phase: str = "Running", gpus: int = 8, schedule: str = ""
) -> dict[str, Any]:
    """Another Dedicated run whose worker holds ``gpus`` GPUs of pool h100 on ``cluster_name``."""
    run = dedicated(workers={"count": 1, "topology": {"tensor": gpus}, "template": TEMPLATE})
    run["metadata"] = {"name": name, "namespace": "other"}
    if schedule:
        run["spec"]["schedule"] = schedule
    run["status"] = {"phase": phase, "cluster": cluster_name, "pool": "h100"}
    return run


def pod(
    job: str,
    *,
    message: str = "",
    phase: str = "Succeeded",
    start: str = T0,
    reporter: str = "vllm",
    last: bool = False,
    pending: str = "",
) -> dict[str, Any]:
    """A pod of Job ``job`` as the cluster reports it; ``message`` is its reporting container's termination message."""
    terminated = {"exitCode": 0 if phase == "Succeeded" else 1, "reason": "Completed", "message": message}
    container: dict[str, Any] = {"name": reporter}
    if phase in ("Succeeded", "Failed"):
        container["lastState" if last else "state"] = {"terminated": terminated}
    status: dict[str, Any] = {"phase": phase, "startTime": start, "containerStatuses": [container]}
    if pending:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": pending}
        ]
    meta = {
        "name": f"{job}-x{start[-9:-7]}",
        "namespace": "ml",
        "labels": {"batch.kubernetes.io/job-name": job, "modelplane.ai/batch-run": "nightly"},
        "annotations": {"modelplane.ai/batch-reporter": reporter},
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": status}


def report(total: int, completed: int, failed: int, **files: str) -> str:
    return json.dumps({"total": total, "completed": completed, "failed": failed, **files})


def job_status(kind: str, **extra: Any) -> dict[str, Any]:
    """A Job's status: ``running``, ``complete``, ``failed``, ``expired``, ``suspended`` or ``pending``."""
    conditions = {
        "complete": [{"type": "Complete", "status": "True", "lastTransitionTime": T1}],
        "failed": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
                "lastTransitionTime": T1,
            }
        ],
        "expired": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "DeadlineExceeded",
                "message": "Job was active longer than specified deadline",
                "lastTransitionTime": T1,
            }
        ],
        "suspended": [{"type": "Suspended", "status": "True", "reason": "JobSuspended"}],
    }.get(kind, [])
    status: dict[str, Any] = {"conditions": conditions} if conditions else {}
    if kind != "suspended":
        status["startTime"] = T0
    if kind == "running":
        status.update(active=1, ready=1)
    if kind == "pending":
        status.update(active=1, ready=0)
    if kind == "complete":
        status.update(succeeded=1, completionTime=T1)
    return {**status, **extra}


def as_observed(
    objects: Mapping[str, Any], *, remote: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """What was composed, as observed: every Object applied; ``remote`` is the status of the remote object by key."""
    out = {}
    for key, composed in objects.items():
        obj = copy.deepcopy(composed)
        if obj.get("kind") == "Object":
            manifest = copy.deepcopy(obj["spec"]["forProvider"]["manifest"])
            if remote and key in remote:
                manifest["status"] = dict(remote[key])
            obj["status"] = {"conditions": [{"type": "Ready", "status": "True"}], "atProvider": {"manifest": manifest}}
        out[key] = obj
    return out


def carrying(manifest: Mapping[str, Any], label: str, run: str) -> dict[str, Any]:
    """The Observe-only Object provider-kubernetes makes of a pod or Job a run's collection found."""
    meta = {"name": f"{run}-{manifest['metadata']['name']}", "namespace": "ml", "labels": {label: run}}
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": meta,
        "spec": {
            "managementPolicies": ["Observe"],
            "forProvider": {"manifest": {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"]}},
        },
        "status": {"atProvider": {"manifest": dict(manifest)}},
    }


@dataclass(frozen=True)
class World:
    """What a call reads besides the run."""

    clusters: tuple[dict[str, Any], ...] = (cluster("east", free={"8": 2}),)
    classes: tuple[dict[str, Any], ...] = (gpu_class(),)
    runs: tuple[dict[str, Any], ...] = ()
    service: dict[str, Any] | None = None
    endpoints: tuple[dict[str, Any], ...] = ()
    replicas: tuple[dict[str, Any], ...] = ()
    pools: tuple[dict[str, Any], ...] = ()
    cache: dict[str, Any] | None = None
    pods: tuple[dict[str, Any], ...] = ()
    jobs: tuple[dict[str, Any], ...] = ()
    observed: dict[str, dict[str, Any]] = field(default_factory=dict)
    own: dict[str, Any] | None = None  # the run's own status as it last wrote it
    fetched: bool = True


def call(run: Mapping[str, Any], world: World = World()) -> dict[str, Any]:
    xr = dict(copy.deepcopy(run))
    if world.own is not None:
        xr["status"] = dict(world.own)
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    if world.fetched:
        answered = {
            "clusters": world.clusters,
            "classes": world.classes,
            "runs": world.runs,
            "service": (world.service,) if world.service is not None else (),
            "endpoints": world.endpoints,
            "replicas": world.replicas,
            "pools": world.pools,
            "cache": (world.cache,) if world.cache is not None else (),
            "pods": tuple(carrying(p, "modelplane.ai/batch-pods-of", xr["metadata"]["name"]) for p in world.pods),
            "jobs": tuple(carrying(j, "modelplane.ai/batch-jobs-of", xr["metadata"]["name"]) for j in world.jobs),
        }
        for name, items in answered.items():
            req.required_resources[name].SetInParent()
            for item in items:
                req.required_resources[name].items.add().resource.update(item)
    for key, body in world.observed.items():
        req.observed.resources[key].resource.update(body)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    # Every observed object is accounted for by the function itself, not by the runner's last guard.
    assert not [r for r in got.get("results", []) if "accounted for" in r.get("message", "")]
    assert not [r for r in got.get("results", []) if r.get("severity") == "SEVERITY_FATAL"], got.get("results")
    return got


def objects(got: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}


def manifest(got: Mapping[str, Any], key: str) -> dict[str, Any]:
    found: dict[str, Any] = objects(got)[key]["spec"]["forProvider"]["manifest"]
    return found


def status(got: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = got["desired"]["composite"]["resource"].get("status", {})
    return found


def condition(got: Mapping[str, Any], typ: str = "Scheduled") -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == typ)


def ready(got: Mapping[str, Any]) -> bool:
    return bool(got["desired"]["composite"].get("ready") == "READY_TRUE")


def warnings(got: Mapping[str, Any]) -> list[str]:
    return [r["message"] for r in got.get("results", []) if r.get("severity") == "SEVERITY_WARNING"]


def pod_spec(job_or_cron: Mapping[str, Any]) -> dict[str, Any]:
    spec = job_or_cron["spec"]
    template = spec["jobTemplate"]["spec"]["template"] if job_or_cron["kind"] == "CronJob" else spec["template"]
    found: dict[str, Any] = template["spec"]
    return found


def job_spec(job_or_cron: Mapping[str, Any]) -> dict[str, Any]:
    spec = job_or_cron["spec"]
    found: dict[str, Any] = spec["jobTemplate"]["spec"] if job_or_cron["kind"] == "CronJob" else spec
    return found


def env(container: Mapping[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}
