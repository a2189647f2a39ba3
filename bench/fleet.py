"""Synthetic fleets as Crossplane sends them: whole objects, with server metadata, status and machinery.

A request is only as expensive as its inputs are large, so the objects here are
shaped like real ones: pod templates with args, env and probes, Crossplane's
``spec.crossplane`` references, a ``managedFields`` entry, status conditions, and on
each InferenceCluster the capacity status ``compose-inference-cluster`` publishes for
the ModelReplicas on it (``modelplane.capacity.published.capacity_status`` of
``modelplane.capacity.summarize``, as that function calls them).

A ModelDeployment's request carries every InferenceCluster and InferenceClass, and in
its required ``replicas`` only its own ModelReplicas (what Crossplane answers for its
label selector): the other deployments' replicas reach it only through the clusters'
published summaries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_inference_cluster.capacity import cluster_pools, listed_replicas, overcommitted_condition
from modelplane.capacity import Observed, Source, summarize
from modelplane.capacity.published import PoolClass, capacity_status, pool_classes
from modelplane.capacity.snapshot import PoolObservations
from modelplane.kinds import API_VERSION
from modelplane.names import (
    CLUSTER_LABEL,
    DEPLOYMENT_LABEL,
    REVISION_LABEL,
    cluster_label,
    endpoint_key,
    replica_key,
)
from modelplane.render.store import Store
from modelplane.scheduling import replica_name, serving_shape, shape_revision
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster

NAMESPACE = "ml"
DEPLOYMENT = "llama-70b"
MODEL = "meta-llama/Llama-3.3-70B-Instruct"
HOPPER_80GI = (
    'device.attributes["gpu.nvidia.com"].architecture == "Hopper" && '
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'
)
_REGIONS = ("us-east", "us-west", "eu-west", "eu-central", "ap-south")
_TIMESTAMP = "2025-01-01T00:00:00Z"
# (tensor, pipeline, count) of the other deployments' replicas: mostly small, some multi-node.
_SHAPES = ((1, 1, 1), (1, 1, 1), (2, 1, 1), (1, 1, 2), (1, 1, 1), (2, 1, 1), (1, 1, 1), (4, 1, 1), (2, 2, 1), (1, 1, 1))
_OTHER_WORK = 8  # GPUs a KAI cluster reports in use on each pool beyond what its Ready replicas hold

# Disjoint uid ranges per kind: a served runner remembers objects by uid and resourceVersion.
_CLUSTER, _REPLICA, _OWN, _ENDPOINT, _DEPLOYMENT = 1_000_000, 2_000_000, 2_900_000, 3_000_000, 4_000_000
_THE_DEPLOYMENT, _SERVICE = 4_999_999, 5_000_000

Shape = tuple[int, int, int]
"""(tensor, pipeline, count) of a unified replica."""


@dataclass(frozen=True)
class FleetSize:
    """How large a synthetic fleet is, around the one deployment being composed (``DEPLOYMENT``)."""

    clusters: int
    others: int  # ModelReplicas of other deployments
    nodes: int = 8  # per pool
    own_kept: int = 2  # replicas of the deployment that already run
    own_new: int = 2  # replicas it still has to place


@dataclass(frozen=True)
class DeploymentFleet:
    """A fleet of ``deployments`` ModelDeployments of ``per`` running replicas each, on ``clusters`` clusters."""

    clusters: int
    deployments: int
    per: int = 10
    nodes: int = 8  # per pool


def _meta(
    name: str,
    index: int,
    *,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "uid": _uid(index),
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
    if annotations is not None:
        meta["annotations"] = annotations
    if owners is not None:
        meta["ownerReferences"] = owners
    return meta


def _uid(index: int) -> str:
    return f"00000000-0000-4000-8000-{index:012d}"


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


def classes() -> list[dict[str, Any]]:
    """The fleet's two InferenceClasses."""
    return [gpu_class(n, product=p, memory=m, index=i) for i, (n, p, m) in enumerate(CLASSES)]


def cluster_name(index: int) -> str:
    """The name of the ``index``-th cluster."""
    return f"c{index:04d}"


def _is_kai(index: int) -> bool:
    return index % 3 == 0


def inference_cluster(index: int, nodes: int, replicas: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """A cluster with two 8-GPU pools; every 10th is staging, every 25th cordoned, every 50th not Ready.

    Its ``status.capacity`` is what compose-inference-cluster publishes for ``replicas`` (the
    ModelReplicas on it; others are ignored). Every third cluster runs KAI, which reports
    what the Ready replicas hold on each pool and 8 GPUs of other work.
    """
    name = cluster_name(index)
    kai = _is_kai(index)
    xr: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "InferenceCluster",
        "metadata": _meta(
            name,
            _CLUSTER + index,
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
            "nodePools": [
                {"name": "h100", "className": "h100", "nodeCount": nodes},
                {
                    "name": "h200",
                    "className": "h200",
                    "nodeCount": nodes // 2,
                    "minNodeCount": 0,
                    "maxNodeCount": nodes,
                },
            ],
            "cordoned": index % 25 == 24,
            "scheduler": {"type": "KAI", "kai": {"queue": "inference"}} if kai else {"type": "None"},
            "serving": {"backend": "KServe"},
            "crossplane": _crossplane("InferenceCluster", name),
        },
    }
    capacity, overcommitted = _published(xr, [r for r in replicas if _cluster_of(r) == name], kai=kai)
    xr["status"] = {
        "cordoned": index % 25 == 24,
        "providerConfigRef": {"name": name, "kind": "ClusterProviderConfig"},
        "gateway": {"address": f"198.51.100.{index % 250}"},
        "capacity": capacity,
        # The ServingStack's anchor every cluster publishes: each replica there composes a Usage of it.
        "stackResourceRefs": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": f"{name}-stack-anchor", "namespace": "crossplane-system"}
        ],
        "conditions": [*_conditions(ready=index % 50 != 49), overcommitted],
    }
    return xr


@lru_cache(maxsize=1)
def _pool_classes() -> dict[str, PoolClass]:
    return pool_classes({c["metadata"]["name"]: InferenceClass.model_validate(c) for c in classes()})


def _published(
    xr: dict[str, Any], replicas: Sequence[dict[str, Any]], *, kai: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``status.capacity`` and the Overcommitted condition, as compose-inference-cluster computes them."""
    pools = _pool_classes()
    name = xr["metadata"]["name"]
    rsp = fnv1.RunFunctionResponse()
    listed = listed_replicas((resource.dict_to_struct(r) for r in replicas), rsp, name)
    if rsp.results:
        msg = f"a synthetic ModelReplica on {name} does not validate: {rsp.results[0].message}"
        raise ValueError(msg)
    observations = PoolObservations({})
    if kai:
        held: dict[str, int] = defaultdict(int)
        for item in listed:
            if item.occupancy.ready:
                for role in item.occupancy.roles:
                    held[role.pool] += role.footprint.total_gpus
        spec_pools = [p["name"] for p in xr["spec"]["nodePools"]]
        observations = PoolObservations({p: Observed(Source.KAI, held[p] + _OTHER_WORK) for p in spec_pools})
    cluster = cluster_pools(InferenceCluster.model_validate(xr), observations)
    summary = summarize(cluster, {n: c.per_node for n, c in pools.items()}, listed)
    condition = overcommitted_condition(summary)
    return capacity_status(cluster.pools, pools, summary), {
        "type": str(condition.type),
        "status": str(condition.status),
        "reason": str(condition.reason),
        "message": condition.message,
        "lastTransitionTime": _TIMESTAMP,
    }


def _cluster_of(replica: dict[str, Any]) -> str:
    name: str = replica["spec"]["inferenceClusterRef"]["name"]
    return name


def published_clusters(clusters: int, nodes: int, replicas: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every cluster, each with the capacity status its function publishes for the fleet's ``replicas``."""
    on: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for replica in replicas:
        on[_cluster_of(replica)].append(replica)
    return [inference_cluster(i, nodes, on.get(cluster_name(i), ())) for i in range(clusters)]


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


def _deployment_index(name: str) -> int:
    """The uid index of deployment ``name``: ``DEPLOYMENT`` or ``model-<n>``."""
    return _THE_DEPLOYMENT if name == DEPLOYMENT else _DEPLOYMENT + int(name.rsplit("-", 1)[1])


def _model(deployment: str) -> str:
    return MODEL if deployment == DEPLOYMENT else f"meta-llama/{deployment}"


def _shape_spec(deployment: str, shape: Shape) -> dict[str, Any]:
    """The serving shape a deployment and its replicas share: node selector and workers."""
    return {"nodeSelector": {"cel": HOPPER_80GI}, "workers": _workers(*shape, _model(deployment))}


@lru_cache(maxsize=64)
def _revision(deployment: str, shape: Shape) -> str:
    return shape_revision(serving_shape(_shape_spec(deployment, shape)))


def model_replica(
    name: str,
    index: int,
    *,
    deployment: str,
    placement: tuple[str, str],
    shape: Shape,
    ready: bool = True,
) -> dict[str, Any]:
    """A ModelReplica on (cluster, pool), as compose-model-deployment and compose-model-replica leave it.

    Its serving shape is its deployment's (same revision); its owner is its deployment's XR.
    """
    cluster, pool = placement
    tensor, pipeline, count = shape
    gpus = tensor * pipeline * count
    why = f"spread: 0 replicas here vs 1 on {cluster} (runner-up)"
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelReplica",
        "metadata": _meta(
            name,
            index,
            namespace=NAMESPACE,
            labels={
                DEPLOYMENT_LABEL: deployment,
                REVISION_LABEL: _revision(deployment, shape),
                CLUSTER_LABEL: cluster_label(cluster),
                "crossplane.io/composite": deployment,
            },
            annotations={"modelplane.ai/placed-by": f'{{"decidedBy":"Spread","why":"{why}"}}'},
            owners=[
                {
                    "apiVersion": API_VERSION,
                    "kind": "ModelDeployment",
                    "name": deployment,
                    "uid": _uid(_deployment_index(deployment)),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        ),
        "spec": {
            "inferenceClusterRef": {"name": cluster},
            "deploymentRef": {"name": deployment},
            "poolName": pool,
            **_shape_spec(deployment, shape),
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


def model_endpoint(replica: dict[str, Any]) -> dict[str, Any]:
    """The ModelEndpoint of ``replica``, as compose-model-deployment and compose-model-endpoint leave it."""
    name = replica["metadata"]["name"]
    deployment = replica["metadata"]["labels"][DEPLOYMENT_LABEL]
    cluster = replica["spec"]["inferenceClusterRef"]["name"]
    ready = replica["status"]["conditions"][-1]["status"] == "True"
    index = _ENDPOINT + int(replica["metadata"]["uid"].rsplit("-", 1)[1]) - _REPLICA
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelEndpoint",
        "metadata": _meta(
            name,
            index,
            namespace=NAMESPACE,
            labels={DEPLOYMENT_LABEL: deployment, "crossplane.io/composite": deployment},
            # Composed by the deployment, as its replica: the service routes only to endpoints so controlled.
            owners=[dict(o) for o in replica["metadata"]["ownerReferences"]],
        ),
        "spec": {
            "url": f"http://{cluster}.example/{NAMESPACE}/{name}",
            "host": f"{name}.{NAMESPACE}.replicas.modelplane.ai",
            "replicaRef": {"name": name},
        },
        "status": {"backendName": name, "conditions": _conditions(ready=ready)},
    }


def _hosts(clusters: int) -> list[int]:
    """The clusters a deployment may run on (prod, not cordoned, Ready: see ``inference_cluster``)."""
    return [i for i in range(clusters) if i % 10 != 9 and i % 25 != 24 and i % 50 != 49] or [0]


def model_deployment(
    name: str, index: int, *, replicas: int, shape: Shape, placed: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """An observed ModelDeployment on Hopper with 80Gi, on prod clusters, with the status it wrote for ``placed``."""
    ready = {r["metadata"]["name"] for r in placed if r["status"]["conditions"][-1]["status"] == "True"}
    revision = _revision(name, shape)
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelDeployment",
        "metadata": _meta(name, index, namespace=NAMESPACE),
        "spec": {
            "replicas": replicas,
            "clusterSelector": {
                "matchLabels": {"tier": "prod"},
                "matchExpressions": [{"key": "region", "operator": "In", "values": list(_REGIONS)}],
            },
            **_shape_spec(name, shape),
            "crossplane": _crossplane("ModelDeployment", name),
        },
        "status": {
            "conditions": _conditions(ready=len(ready) >= replicas),
            "replicas": len(placed),
            "readyReplicas": len(ready),
            "updatedReplicas": len(placed),
            "observedRevision": revision,
            "selector": f"{DEPLOYMENT_LABEL}={name}",
            "placements": [
                {
                    "replica": r["metadata"]["name"],
                    "cluster": _cluster_of(r),
                    "pools": {"unified": r["spec"]["poolName"]},
                    "ready": r["metadata"]["name"] in ready,
                    "revision": revision,
                    "state": "Current",
                    "decidedBy": "Spread",
                    "why": f"spread: 0 replicas here vs 1 on {_cluster_of(r)} (runner-up)",
                }
                for r in placed
            ],
        },
    }


def deployment_request(
    xr: dict[str, Any], own: Sequence[dict[str, Any]], clusters: Sequence[dict[str, Any]]
) -> fnv1.RunFunctionRequest:
    """compose-model-deployment's second request: its XR, what it composed, and its required resources answered.

    Required: every cluster and class, and ``own`` (the replicas its label selector lists).
    """
    req = own_part(xr, own)
    req.MergeFrom(shared_part(clusters))
    return req


def own_part(xr: dict[str, Any], own: Sequence[dict[str, Any]]) -> fnv1.RunFunctionRequest:
    """The part of a deployment's request that is its own: its XR, its composed resources, its listed replicas."""
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="bench"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    for body in own:
        ordinal = int(body["metadata"]["name"].rsplit("-", 1)[1])
        req.observed.resources[replica_key(ordinal)].resource.update(body)
        req.observed.resources[endpoint_key(ordinal)].resource.update(model_endpoint(body))
    _require(req, replicas=list(own))
    return req


def shared_part(clusters: Sequence[dict[str, Any]]) -> fnv1.RunFunctionRequest:
    """The part every deployment's request shares: the required InferenceClusters and InferenceClasses."""
    req = fnv1.RunFunctionRequest()
    # No FleetQuota or FleetPriorityClass: a fleet without quotas.
    _require(req, clusters=list(clusters), classes=classes(), quotas=[], priorityclasses=[])
    return req


# The deployment being composed, in a fleet of other deployments' replicas (``FleetSize``).


def other_replicas(size: FleetSize) -> list[dict[str, Any]]:
    """``size.others`` replicas of 50 other deployments, spread over the clusters and pools; every 10th not Ready."""
    out = []
    for i in range(size.others):
        deployment = f"model-{i % 50:02d}"
        out.append(
            model_replica(
                replica_name(deployment, i // 50),
                _REPLICA + i,
                deployment=deployment,
                placement=(cluster_name((i * 7) % size.clusters), ("h100", "h200")[i % 2]),
                shape=_SHAPES[i % len(_SHAPES)],
                ready=i % 10 != 0,
            )
        )
    return out


def own_replicas(size: FleetSize) -> list[dict[str, Any]]:
    """The replicas of the deployment being composed that already run (ordinals 0 .. own_kept - 1).

    Each runs on a cluster the deployment may use (prod, not cordoned, Ready), so none has to move.
    """
    hosts = _hosts(size.clusters)
    return [
        model_replica(
            replica_name(DEPLOYMENT, i),
            _OWN + i,
            deployment=DEPLOYMENT,
            placement=(cluster_name(hosts[i % len(hosts)]), "h100"),
            shape=(4, 1, 1),
        )
        for i in range(size.own_kept)
    ]


def the_deployment(size: FleetSize) -> dict[str, Any]:
    """The observed ModelDeployment being composed: TP=4, ``own_kept`` replicas running, ``own_new`` to place."""
    return model_deployment(
        DEPLOYMENT,
        _deployment_index(DEPLOYMENT),
        replicas=size.own_kept + size.own_new,
        shape=(4, 1, 1),
        placed=own_replicas(size),
    )


@lru_cache(maxsize=2)
def fleet_clusters(size: FleetSize) -> tuple[dict[str, Any], ...]:
    """The clusters of ``size``'s fleet, publishing what the other deployments' replicas and its own hold."""
    return tuple(published_clusters(size.clusters, size.nodes, [*other_replicas(size), *own_replicas(size)]))


def request(size: FleetSize) -> fnv1.RunFunctionRequest:
    """The RunFunctionRequest Crossplane sends on the second pass, required resources filled."""
    return deployment_request(the_deployment(size), own_replicas(size), fleet_clusters(size))


# A fleet of deployments, each with its replicas running (``DeploymentFleet``).


def fleet_deployment(fleet: DeploymentFleet, d: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``d``-th deployment of ``fleet`` (``model-NNNN``, a shape of ``_SHAPES``) and its running replicas.

    Its replicas run on clusters it may use, spread over them and both pools, all Ready.
    """
    name = f"model-{d:04d}"
    shape = _SHAPES[d % len(_SHAPES)]
    hosts = _hosts(fleet.clusters)
    own = []
    for k in range(fleet.per):
        i = d * fleet.per + k
        own.append(
            model_replica(
                replica_name(name, k),
                _REPLICA + i,
                deployment=name,
                placement=(cluster_name(hosts[(i * 7) % len(hosts)]), ("h100", "h200")[i % 2]),
                shape=shape,
            )
        )
    return model_deployment(name, _deployment_index(name), replicas=fleet.per, shape=shape, placed=own), own


@lru_cache(maxsize=1)
def deployment_fleet_clusters(fleet: DeploymentFleet) -> tuple[dict[str, Any], ...]:
    """The clusters of ``fleet``, publishing what every deployment's replicas hold."""
    replicas = (r for d in range(fleet.deployments) for r in fleet_deployment(fleet, d)[1])
    return tuple(published_clusters(fleet.clusters, fleet.nodes, replicas))


def fleet_request(fleet: DeploymentFleet, d: int) -> fnv1.RunFunctionRequest:
    """The ``d``-th deployment's request: its XR and own replicas, every cluster and class."""
    xr, own = fleet_deployment(fleet, d)
    return deployment_request(xr, own, deployment_fleet_clusters(fleet))


# The other functions that read the fleet.


def cluster_request(size: FleetSize) -> tuple[fnv1.RunFunctionRequest, list[dict[str, Any]]]:
    """compose-inference-cluster's first request for the first cluster, and the objects its requirements select from."""
    xr = fleet_clusters(size)[0] if size.clusters else inference_cluster(0, size.nodes)
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
        "metadata": _meta(DEPLOYMENT, _SERVICE, namespace=NAMESPACE),
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
    return req, [gateway, *(model_endpoint(r) for r in replicas)]


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
