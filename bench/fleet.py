"""Synthetic fleets as Crossplane sends them: whole objects, with server metadata, status and machinery.

A request is only as expensive as its inputs are large, so the objects here are
shaped like real ones: pod templates with args, env and probes, Crossplane's
``spec.crossplane`` references, a ``managedFields`` entry, status conditions and
the capacity figures ``compose-inference-cluster`` writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.kinds import API_VERSION
from modelplane.names import CLUSTER_LABEL, DEPLOYMENT_LABEL, cluster_label, endpoint_key, replica_key
from modelplane.render.store import Store
from modelplane.scheduling import replica_name

NAMESPACE = "ml"
DEPLOYMENT = "llama-70b"
HOPPER_80GI = (
    'device.attributes["gpu.nvidia.com"].architecture == "Hopper" && '
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'
)
_REGIONS = ("us-east", "us-west", "eu-west", "eu-central", "ap-south")
_TIMESTAMP = "2025-01-01T00:00:00Z"
# (tensor, pipeline, count) of the other deployments' replicas: mostly small, some multi-node.
_SHAPES = ((1, 1, 1), (1, 1, 1), (2, 1, 1), (1, 1, 2), (1, 1, 1), (2, 1, 1), (1, 1, 1), (4, 1, 1), (2, 2, 1), (1, 1, 1))


@dataclass(frozen=True)
class FleetSize:
    """How large a synthetic fleet is."""

    clusters: int
    others: int  # ModelReplicas of other deployments
    nodes: int = 8  # per pool
    own_kept: int = 2  # replicas of the deployment that already run
    own_new: int = 2  # replicas it still has to place


def _meta(
    name: str,
    index: int,
    *,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "uid": f"00000000-0000-4000-8000-{index:012d}",
        "resourceVersion": str(100000 + index),
        "generation": 1,
        "creationTimestamp": _TIMESTAMP,
        "managedFields": [
            {
                "apiVersion": API_VERSION,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {".": {}}},
                "manager": "apiextensions.crossplane.io/composed",
                "operation": "Apply",
                "time": _TIMESTAMP,
            }
        ],
    }
    if namespace is not None:
        meta["namespace"] = namespace
    if labels is not None:
        meta["labels"] = labels
    if owners is not None:
        meta["ownerReferences"] = owners
    return meta


def _conditions(*, ready: bool = True) -> list[dict[str, Any]]:
    return [
        {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": _TIMESTAMP},
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": "Available" if ready else "Creating",
            "lastTransitionTime": _TIMESTAMP,
        },
    ]


def _crossplane(kind: str, name: str) -> dict[str, Any]:
    return {
        "compositionRef": {"name": f"{kind.lower()}s.modelplane.ai"},
        "compositionRevisionRef": {"name": f"{kind.lower()}s.modelplane.ai-0f1e2d3"},
        "compositionUpdatePolicy": "Automatic",
        "resourceRefs": [{"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object", "name": name}],
    }


def gpu_class(name: str, *, product: str, memory: str, index: int) -> dict[str, Any]:
    """An 8-GPU Hopper class, as compose-inference-class leaves it."""
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceClass",
        "metadata": _meta(name, index),
        "spec": {
            "description": f"8x {product}",
            "devices": [
                {
                    "name": "gpu",
                    "driver": "gpu.nvidia.com",
                    "deviceClassName": "gpu.nvidia.com",
                    "count": 8,
                    "attributes": {
                        "productName": {"string": product},
                        "architecture": {"string": "Hopper"},
                        "cudaComputeCapability": {"version": "9.0.0"},
                        "driverVersion": {"version": "570.133.20"},
                    },
                    "capacity": {"memory": {"value": memory}},
                },
                {
                    "name": "ib",
                    "driver": "ib.nvidia.com",
                    "claim": "Synthetic",
                    "count": 8,
                    "attributes": {"linkRate": {"string": "NDR"}},
                },
            ],
        },
        "status": {
            "accelerator": {"countPerNode": 8, "device": "gpu", "driver": "gpu.nvidia.com", "memory": memory},
            "conditions": _conditions(),
        },
    }


CLASSES = (("h100", "NVIDIA H100 80GB HBM3", "80Gi"), ("h200", "NVIDIA H200 141GB HBM3e", "141Gi"))


def cluster_name(index: int) -> str:
    """The name of the ``index``-th cluster."""
    return f"c{index:04d}"


def inference_cluster(index: int, nodes: int) -> dict[str, Any]:
    """A cluster with two 8-GPU pools; every 10th is staging, every 25th cordoned, every 50th not Ready."""
    name = cluster_name(index)
    kai = index % 3 == 0
    pools: list[dict[str, Any]] = [
        {"name": "h100", "className": "h100", "nodeCount": nodes},
        {"name": "h200", "className": "h200", "nodeCount": nodes // 2, "minNodeCount": 0, "maxNodeCount": nodes},
    ]
    status_pools = [
        {
            "name": p["name"],
            "className": p["className"],
            "nodes": p["nodeCount"],
            "devicesPerNode": 8,
            "deviceMemory": "80Gi" if p["className"] == "h100" else "141Gi",
            "declared": 8 * p["nodeCount"],
            "inUse": 8,
            "free": 8 * p["nodeCount"] - 8,
            "source": "KAI" if kai else "Declared",
        }
        for p in pools
    ]
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceCluster",
        "metadata": _meta(
            name,
            1000 + index,
            labels={
                "region": _REGIONS[index % len(_REGIONS)],
                "tier": "staging" if index % 10 == 9 else "prod",
                "cloud": "onprem",
            },
        ),
        "spec": {
            "cluster": {
                "source": "Existing",
                "existing": {"secretRef": {"namespace": "crossplane-system", "name": f"{name}-kubeconfig"}},
            },
            "nodePools": pools,
            "cordoned": index % 25 == 24,
            "scheduler": {"type": "KAI", "kai": {"queue": "inference"}} if kai else {"type": "None"},
            "serving": {"backend": "KServe"},
            "crossplane": _crossplane("InferenceCluster", name),
        },
        "status": {
            "cordoned": index % 25 == 24,
            "providerConfigRef": {"name": name, "kind": "ClusterProviderConfig"},
            "gateway": {"address": f"198.51.100.{index % 250}"},
            "capacity": {
                "declared": sum(p["declared"] for p in status_pools),
                "inUse": 16,
                "free": sum(p["free"] for p in status_pools),
                "pools": status_pools,
            },
            "conditions": _conditions(ready=index % 50 != 49),
        },
    }


def _workers(tensor: int, pipeline: int, count: int, model: str) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10}
    return {
        "count": count,
        "topology": {"tensor": tensor, "pipeline": pipeline},
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "vllm/vllm-openai:v0.11.0",
                        "args": [
                            f"--model={model}",
                            f"--served-model-name={model.rsplit('/', 1)[-1].lower()}",
                            f"--tensor-parallel-size={tensor}",
                            f"--pipeline-parallel-size={pipeline}",
                            "--max-model-len=32768",
                        ],
                        "env": [
                            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}},
                            {"name": "VLLM_LOGGING_LEVEL", "value": "INFO"},
                        ],
                        "ports": [{"name": "http", "containerPort": 8000}],
                        "resources": {"requests": {"cpu": "16", "memory": "128Gi"}, "limits": {"memory": "192Gi"}},
                        "readinessProbe": probe,
                        "startupProbe": {**probe, "failureThreshold": 180},
                    }
                ],
                "sharedMemorySize": "16Gi",
            }
        },
    }


def model_replica(
    name: str,
    index: int,
    *,
    deployment: str,
    placement: tuple[str, str],
    shape: tuple[int, int, int],
    ready: bool = True,
) -> dict[str, Any]:
    """A ModelReplica on (cluster, pool), as compose-model-deployment and compose-model-replica leave it."""
    cluster, pool = placement
    tensor, pipeline, count = shape
    gpus = tensor * pipeline * count
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelReplica",
        "metadata": _meta(
            name,
            5000 + index,
            namespace=NAMESPACE,
            labels={
                DEPLOYMENT_LABEL: deployment,
                CLUSTER_LABEL: cluster_label(cluster),
                "crossplane.io/composite": deployment,
            },
            owners=[
                {
                    "apiVersion": API_VERSION,
                    "kind": "ModelDeployment",
                    "name": deployment,
                    "uid": f"00000000-0000-4000-9000-{index:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        ),
        "spec": {
            "inferenceClusterRef": {"name": cluster},
            "deploymentRef": {"name": deployment},
            "poolName": pool,
            "nodeSelector": {"cel": HOPPER_80GI},
            "workers": _workers(tensor, pipeline, count, f"meta-llama/{deployment}"),
            "crossplane": _crossplane("ModelReplica", name),
        },
        "status": {
            "conditions": _conditions(ready=ready),
            "endpoint": {"url": f"http://{cluster}.example/{NAMESPACE}/{name}"} if ready else {},
            "gpus": {
                "total": gpus,
                "unified": {
                    "gpus": gpus,
                    "gpusPerNode": tensor,
                    "nodesPerWorker": pipeline,
                    "workers": count,
                },
            },
        },
    }


def other_replicas(size: FleetSize) -> list[dict[str, Any]]:
    """``size.others`` replicas of 50 other deployments, spread over the clusters and pools."""
    out = []
    for i in range(size.others):
        deployment = f"model-{i % 50:02d}"
        out.append(
            model_replica(
                replica_name(deployment, i // 50),
                i,
                deployment=deployment,
                placement=(cluster_name((i * 7) % size.clusters), ("h100", "h200")[i % 2]),
                shape=_SHAPES[i % len(_SHAPES)],
                ready=i % 10 != 0,
            )
        )
    return out


def _hosts_deployment(index: int) -> bool:
    """Whether the ``index``-th cluster is one the deployment may run on (see ``inference_cluster``)."""
    return index % 10 != 9 and index % 25 != 24 and index % 50 != 49


def own_replicas(size: FleetSize) -> list[dict[str, Any]]:
    """The replicas of the deployment being composed that already run (ordinals 0 .. own_kept - 1).

    Each runs on a cluster the deployment may use (prod, not cordoned, Ready), so none has to move.
    """
    hosts = [i for i in range(size.clusters) if _hosts_deployment(i)] or [0]
    return [
        model_replica(
            replica_name(DEPLOYMENT, i),
            90000 + i,
            deployment=DEPLOYMENT,
            placement=(cluster_name(hosts[i % len(hosts)]), "h100"),
            shape=(4, 1, 1),
        )
        for i in range(size.own_kept)
    ]


def model_deployment(size: FleetSize) -> dict[str, Any]:
    """The observed ModelDeployment: TP=4 on Hopper with 80Gi, on prod clusters."""
    replicas = size.own_kept + size.own_new
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelDeployment",
        "metadata": _meta(DEPLOYMENT, 99999, namespace=NAMESPACE),
        "spec": {
            "replicas": replicas,
            "clusterSelector": {
                "matchLabels": {"tier": "prod"},
                "matchExpressions": [{"key": "region", "operator": "In", "values": list(_REGIONS)}],
            },
            "nodeSelector": {"cel": HOPPER_80GI},
            "workers": _workers(4, 1, 1, "meta-llama/Llama-3.3-70B-Instruct"),
            "crossplane": _crossplane("ModelDeployment", DEPLOYMENT),
        },
        "status": {"conditions": _conditions(ready=False), "replicas": size.own_kept},
    }


def request(size: FleetSize) -> fnv1.RunFunctionRequest:
    """The RunFunctionRequest Crossplane sends on the second pass, required resources filled."""
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="bench"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(model_deployment(size)))),
    )
    own = own_replicas(size)
    for i, body in enumerate(own):
        req.observed.resources[replica_key(i)].resource.update(body)
        req.observed.resources[endpoint_key(i)].resource.update(model_endpoint(body, 95000 + i))
    _require(
        req,
        clusters=[inference_cluster(i, size.nodes) for i in range(size.clusters)],
        classes=classes(),
        replicas=other_replicas(size) + own,
    )
    return req


def classes() -> list[dict[str, Any]]:
    """The fleet's two InferenceClasses."""
    return [gpu_class(n, product=p, memory=m, index=i) for i, (n, p, m) in enumerate(CLASSES)]


def model_endpoint(replica: dict[str, Any], index: int) -> dict[str, Any]:
    """The ModelEndpoint of ``replica``, as compose-model-deployment and compose-model-endpoint leave it."""
    name = replica["metadata"]["name"]
    deployment = replica["metadata"]["labels"][DEPLOYMENT_LABEL]
    cluster = replica["spec"]["inferenceClusterRef"]["name"]
    ready = replica["status"]["conditions"][-1]["status"] == "True"
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelEndpoint",
        "metadata": _meta(
            name,
            index,
            namespace=NAMESPACE,
            labels={DEPLOYMENT_LABEL: deployment, "crossplane.io/composite": deployment},
        ),
        "spec": {
            "url": f"http://{cluster}.example/{NAMESPACE}/{name}",
            "host": f"{name}.{NAMESPACE}.replicas.modelplane.ai",
            "replicaRef": {"name": name},
        },
        "status": {"backendName": name, "conditions": _conditions(ready=ready)},
    }


def cluster_request(size: FleetSize) -> tuple[fnv1.RunFunctionRequest, list[dict[str, Any]]]:
    """compose-inference-cluster's first request for the first cluster, and the objects its requirements select from."""
    xr = inference_cluster(0, size.nodes)
    secret = xr["spec"]["cluster"]["existing"]["secretRef"]
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(secret["name"], 3, namespace=secret["namespace"]),
        "type": "Opaque",
        "data": {"kubeconfig": "YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmlnCg=="},
    }
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="bench"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    return req, [*classes(), *other_replicas(size), *own_replicas(size), kubeconfig]


def service_request(
    size: FleetSize, *, expressions: bool = False
) -> tuple[fnv1.RunFunctionRequest, list[dict[str, Any]]]:
    """compose-model-service's first request for the deployment's service, and the objects it may require.

    Those are the gateway and the fleet's ModelEndpoints, all in the service's namespace. With
    ``expressions`` the service selects its endpoints by a matchExpressions selector, which
    Crossplane cannot: the service then requires the whole namespace.
    """
    by_expression = {"matchExpressions": [{"key": DEPLOYMENT_LABEL, "operator": "In", "values": [DEPLOYMENT]}]}
    selector = by_expression if expressions else {"matchLabels": {DEPLOYMENT_LABEL: DEPLOYMENT}}
    xr = {
        "apiVersion": API_VERSION,
        "kind": "ModelService",
        "metadata": _meta(DEPLOYMENT, 99998, namespace=NAMESPACE),
        "spec": {
            "endpoints": [{"selector": selector, "weight": 100}],
            "crossplane": _crossplane("ModelService", DEPLOYMENT),
        },
    }
    gateway = {
        "apiVersion": API_VERSION,
        "kind": "InferenceGateway",
        "metadata": _meta("default", 4),
        "spec": {},
        "status": {"address": "203.0.113.10", "conditions": _conditions()},
    }
    replicas = other_replicas(size) + own_replicas(size)
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="bench"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    return req, [gateway, *(model_endpoint(r, 95000 + i) for i, r in enumerate(replicas))]


def answer(req: fnv1.RunFunctionRequest, requirements: fnv1.Requirements, objects: list[dict[str, Any]]) -> None:
    """Fill ``req``'s required resources as Crossplane answers ``requirements`` from ``objects`` (by name or labels)."""
    store = Store(objects)
    for name, selector in requirements.resources.items():
        req.required_resources[name].CopyFrom(store.fetch(selector))


def _require(req: fnv1.RunFunctionRequest, **required: list[dict[str, Any]]) -> None:
    """Fill ``req``'s required resources as Crossplane does on the second pass."""
    for name, items in required.items():
        req.required_resources[name].SetInParent()
        for item in items:
            req.required_resources[name].items.add().resource.update(item)
