"""Builders for compose-model-replica tests: replicas of each shape, clusters of each backend and scheduler."""

from __future__ import annotations

import copy
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

NAMESPACE = "ml"
HOPPER = 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"team": "research"}, "annotations": {"example.com/owner": "ml"}},
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "vllm/vllm-openai:v0.11.0",
                "args": ["--model=meta-llama/Llama-3.1-8B-Instruct"],
                "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}],
                "ports": [{"name": "http", "containerPort": 8000}],
                "resources": {"requests": {"cpu": "8", "memory": "64Gi"}},
            }
        ],
        "imagePullSecrets": [{"name": "registry"}],
        "sharedMemorySize": "16Gi",
    },
}


def gpu_class(name: str = "h100", *, dra_nic: bool = False) -> dict[str, Any]:
    """An 8-GPU class, optionally with a DRA NIC and a Synthetic InfiniBand NIC."""
    devices: list[dict[str, Any]] = [
        {
            "name": "gpu",
            "driver": "gpu.nvidia.com",
            "deviceClassName": "gpu.nvidia.com",
            "count": 8,
            "attributes": {"architecture": {"string": "Hopper"}},
            "capacity": {"memory": {"value": "80Gi"}},
        },
        {"name": "ib", "driver": "ib.nvidia.com", "claim": "Synthetic", "count": 8},
    ]
    if dra_nic:
        devices.append({"name": "nic", "driver": "nic.example.com", "deviceClassName": "nic.example.com", "count": 2})
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceClass",
        "metadata": {"name": name},
        "spec": {"devices": devices},
    }


def cluster(*, backend: str = "KServe", scheduler: str = "None", ready: bool = True) -> dict[str, Any]:
    """The cluster ``east``: pools ``gpu`` and ``gpu-b`` of class h100."""
    sched: dict[str, Any] = {"type": scheduler}
    if scheduler == "KAI":
        sched["kai"] = {"queue": "inference"}
    if scheduler == "Kueue":
        sched["kueue"] = {"localQueueName": "serving"}
    body: dict[str, Any] = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "east"},
        "spec": {
            "cluster": {"source": "Existing", "existing": {"secretRef": {"namespace": "cs", "name": "east"}}},
            "nodePools": [
                {"name": "gpu", "className": "h100", "nodeCount": 8},
                {"name": "gpu-b", "className": "h100", "nodeCount": 8},
            ],
            "scheduler": sched,
            "serving": {"backend": backend},
        },
    }
    if ready:
        body["status"] = {
            "providerConfigRef": {"name": "east", "kind": "ClusterProviderConfig"},
            "gateway": {"address": "203.0.113.7", "url": "https://203.0.113.7", "tls": GATEWAY_TLS},
        }
    return body


GATEWAY_TLS = {
    "caSecretRef": {"name": "east-gateway-ca", "namespace": "crossplane-system"},
    "hostname": "gateway.modelplane.ai",
}


def workers(tensor: int = 1, pipeline: int = 1, count: int = 1) -> dict[str, Any]:
    """A workers block."""
    return {"count": count, "topology": {"tensor": tensor, "pipeline": pipeline}, "template": copy.deepcopy(TEMPLATE)}


def replica(shape: str, name: str = "llm-0") -> dict[str, Any]:
    """A ModelReplica of a named shape: single-gpu, tp4, tp8-pp2 (multi-node) or 5p3d (disaggregated)."""
    spec: dict[str, Any] = {"inferenceClusterRef": {"name": "east"}, "deploymentRef": {"name": "llm"}}
    selector = {"cel": HOPPER}
    if shape == "5p3d":
        spec["prefill"] = {"nodeSelector": selector, "workers": workers(tensor=2, count=5), "poolName": "gpu"}
        spec["decode"] = {"nodeSelector": selector, "workers": workers(tensor=4, count=3), "poolName": "gpu-b"}
    else:
        tensor, pipeline = {"single-gpu": (1, 1), "tp4": (4, 1), "tp8-pp2": (8, 2)}[shape]
        spec["poolName"] = "gpu"
        spec["nodeSelector"] = selector
        spec["workers"] = workers(tensor=tensor, pipeline=pipeline)
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def request(
    xr: dict[str, Any],
    *,
    cluster_body: dict[str, Any] | None,
    classes: tuple[dict[str, Any], ...] = (),
    fetched: bool = True,
    observed: dict[str, dict[str, Any]] | None = None,
    pods: tuple[dict[str, Any], ...] = (),
) -> fnv1.RunFunctionRequest:
    """A RunFunctionRequest; ``fetched=False`` is the first call, before any required resource came."""
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    for key, body in (observed or {}).items():
        req.observed.resources[key].resource.update(body)
    if not fetched:
        return req
    req.required_resources["cluster"].SetInParent()
    if cluster_body is not None:
        req.required_resources["cluster"].items.add().resource.update(cluster_body)
    req.required_resources["classes"].SetInParent()
    for c in classes:
        req.required_resources["classes"].items.add().resource.update(c)
    req.required_resources["pods"].SetInParent()
    for pod in pods:
        obj = {
            "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
            "kind": "Object",
            "metadata": {"name": f"pod-{pod['metadata']['name']}", "namespace": NAMESPACE},
            "status": {"atProvider": {"manifest": pod}},
        }
        req.required_resources["pods"].items.add().resource.update(obj)
    return req


def condition_of(out: dict[str, Any], typ: str) -> dict[str, Any]:
    """The condition ``typ`` of a response read as JSON (``json_format.MessageToDict``)."""
    return next(c for c in out.get("conditions", []) if c["type"] == typ)


def warnings_of(out: dict[str, Any]) -> list[str]:
    """The Warning results' messages of a response read as JSON."""
    return [r["message"] for r in out.get("results", []) if r.get("severity") == "SEVERITY_WARNING"]
