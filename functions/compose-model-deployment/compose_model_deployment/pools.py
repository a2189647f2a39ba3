"""Write a ModelDeployment's pool on each cluster it runs on, and the pool's ModelEndpoint (routing mode Pool).

The deployment composes the pool, not a replica: it is the one writer that knows
every replica of the deployment on a cluster, so a replica added or removed there
changes the pool endpoint's weight, never the pool. The pool is one ModelPool per
cluster (its own function, compose-model-pool, composes the InferencePool, endpoint
picker and route there), so the deployment's composition carries one small object
per cluster, not every remote object of every pool. A cluster's pool is composed
while any replica of the deployment is placed there, runs there or is still being
deleted there; it goes (for that reason) only once none is. When the cluster cannot
be read (no ProviderConfig yet, missing from the fleet) its pool is kept as it is.

The pool's ModelEndpoint is the deployment's route into the cluster: the cluster's
gateway address (as its replicas report it), the pool's virtual host, and a weight
of the replicas Ready there. Until the pool and that endpoint are Ready (the pool
being set up, or a cluster that publishes no ProviderConfig to compose it with)
each replica there keeps its own endpoint, as in mode Replica, so the route always
has a backend; once both are Ready they go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format
from google.protobuf import struct_pb2 as structpb

from compose_model_deployment.desired import Deployment
from compose_model_deployment.own import Own
from modelplane.backends.monitor import SGLANG_PORT
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.structs import labels_at, readiness_at, string_at
from modelplane.kinds import API_VERSION
from modelplane.memo import once
from modelplane.monitoring import prometheus_of
from modelplane.names import (
    CLUSTER_LABEL,
    DEPLOYMENT_LABEL,
    SERVING_ANNOTATION,
    cluster_label,
    endpoint_key,
    is_routing_pool_key,
    pool_endpoint_name,
    pool_host,
    routing_pool_key,
)
from modelplane.routing.backend_tls import UpstreamTLS
from modelplane.routing.picker import Engine, Profile, Routing, engine_of, picker_config

ENDPOINT_PART = "endpoint"
POOL_PART = "pool"  # the ModelPool: its function composes the pool's objects on the cluster
DEFAULT_PORT = 8000  # the engine's port when its first container declares none (vLLM's default)


@dataclass(frozen=True)
class ClusterRouting:
    """What a pool needs of its InferenceCluster."""

    provider_config: str
    backend: str
    prometheus: str


@dataclass(frozen=True)
class PoolCluster:
    """One cluster a pool is composed for: its replicas, those Ready, and a URL of its gateway they report.

    ``tls`` is how that gateway is verified, reported with the URL (https only).
    """

    name: str
    ready: int
    url: str | None
    tls: UpstreamTLS | None = None


def cluster_routing(fleet: Iterable[tuple[str, structpb.Struct]], names: set[str]) -> dict[str, ClusterRouting]:
    """The clusters ``names`` that publish a ProviderConfig, as a pool reads them.

    ``fleet``: every InferenceCluster as it came with its name (``Fleet.named``); the first of a name counts.
    """
    out = {}
    for name, struct in fleet:
        if name not in names or name in out:
            continue  # the fleet's other clusters: their name is all that is read
        provider_config = string_at(struct, "status", "providerConfigRef", "name")
        if provider_config:
            out[name] = ClusterRouting(
                provider_config=provider_config,
                backend=string_at(struct, "spec", "serving", "backend") or "KServe",
                prometheus=string_at(struct, "spec", "observability", "prometheus") or "None",
            )
    return out


def pool_clusters(plan_clusters: Sequence[str], own: Own) -> dict[str, PoolCluster]:
    """Every cluster that needs the deployment's pool: placed, running or still deleting a replica there."""
    names = set(plan_clusters) | {r.occupancy.cluster for r in own.replicas.values()}
    names |= {o.cluster for o in own.going.values() if o is not None}
    out = {}
    for name in sorted(names):
        here = [own.replicas[o] for o in sorted(own.replicas) if own.replicas[o].occupancy.cluster == name]
        # One replica's report gives both the URL and its CA, so the two always agree; https first, as a
        # cluster moving to TLS has replicas that report it before others do.
        reporter = next((r for r in here if r.url and r.url.startswith("https://")), None)
        reporter = reporter or next((r for r in here if r.url), None)
        url = reporter.url if reporter is not None else None
        tls = reporter.tls if reporter is not None else None
        out[name] = PoolCluster(name, sum(1 for r in here if r.occupancy.ready), url, tls)
    return out


def pool_endpoint_ready(req: fnv1.RunFunctionRequest, cluster: str) -> bool:
    """Whether the cluster's pool and its endpoint are observed Ready (then its replicas' own endpoints may go)."""
    for part in (POOL_PART, ENDPOINT_PART):
        observed = req.observed.resources.get(routing_pool_key(cluster, part))
        if observed is None or not readiness_at(observed.resource.fields).true:
            return False
    return True


def write_pools(
    ledger: Ledger,
    deployment: Deployment,
    routing: Routing,
    clusters: Mapping[str, PoolCluster],
    readable: Mapping[str, ClusterRouting],
) -> None:
    """Compose each cluster's pool and pool endpoint; keep a pool whose cluster cannot be read; remove the rest.

    Raises:
        InvalidPickerConfigError: a Custom endpoint picker config that cannot be used (nothing is written).
    """
    shape = _serving_shape(deployment.spec)
    picker_config(routing.picker, disaggregated=shape.role == "decode")  # raises on a Custom config it cannot use
    for cluster in clusters.values():
        info = readable.get(cluster.name)
        if info is None:
            continue
        labels = {DEPLOYMENT_LABEL: deployment.name, CLUSTER_LABEL: cluster_label(cluster.name)}
        key = routing_pool_key(cluster.name, POOL_PART)
        pool = _model_pool(deployment, cluster.name, shape, routing, info, labels)
        ledger.put(key, pool, ready=inputs.ready(ledger.req, ledger.rsp, key).true)
        _write_endpoint(ledger, deployment, cluster, labels)


def settle_pools(ledger: Ledger, clusters: Mapping[str, PoolCluster], why_kept: str, *, unsure: bool) -> None:
    """Account for every observed pool object not written: removed once no replica is on its cluster, else kept.

    With ``unsure`` (a composed replica that cannot be read, so its cluster is not known) or an object whose
    cluster label cannot be read, nothing is removed: it may serve a replica no input shows.
    """
    wanted = {cluster_label(name): name for name in clusters}
    for key in sorted(ledger.req.observed.resources):
        if not is_routing_pool_key(key) or key in ledger.rsp.desired.resources:
            continue
        label = (labels_at(ledger.req.observed.resources[key].resource) or {}).get(CLUSTER_LABEL)
        if label in wanted:
            ledger.keep([key], why_kept.format(cluster=wanted[label]))
        elif unsure or label is None:
            ledger.keep([key], f"{key}: its cluster, or a replica's, cannot be read: kept as it is")
        else:
            ledger.remove([key], f"{key}: no replica of the deployment is placed on, runs on or leaves its cluster")


def pools_still_serving(req: fnv1.RunFunctionRequest, clusters: Mapping[str, PoolCluster], own: Own) -> list[str]:
    """Routing mode Replica: the clusters whose pool still carries traffic the replicas' own endpoints do not.

    The mirror of moving to mode Pool: a cluster's pool serves on while its endpoint is Ready and some
    Ready replica there has no Ready endpoint of its own yet.
    """
    return sorted(n for n in clusters if pool_endpoint_ready(req, n) and not _own_endpoints_ready(req, own, n))


def release_pools(ledger: Ledger, serving: Sequence[str], *, unsure: bool) -> None:
    """Routing mode Replica: keep, as it is, the pool (and its ModelEndpoint) of each cluster in ``serving``.

    Every other pool goes, so the route never loses the backend that carries a cluster's traffic. An
    object whose cluster cannot be read, or any with ``unsure`` (a composed replica that cannot be read),
    is kept: it may serve a replica no input shows.
    """
    waiting = {cluster_label(name): name for name in serving}
    for key in sorted(ledger.req.observed.resources):
        if not is_routing_pool_key(key) or key in ledger.rsp.desired.resources:
            continue
        label = (labels_at(ledger.req.observed.resources[key].resource) or {}).get(CLUSTER_LABEL)
        if label in waiting:
            why = f"mode Replica: kept until the Ready replicas on {waiting[label]} have Ready endpoints of their own"
            ledger.keep([key], why)
        elif unsure or label is None:
            ledger.keep([key], f"{key}: its cluster, or a replica's, cannot be read: kept as it is")
        else:
            ledger.remove([key], f"{key}: spec.routing.mode is Replica")


def _own_endpoints_ready(req: fnv1.RunFunctionRequest, own: Own, cluster: str) -> bool:
    """Whether every Ready replica on ``cluster`` has its own endpoint observed Ready."""
    for ordinal, replica in own.replicas.items():
        if replica.occupancy.cluster != cluster or not replica.occupancy.ready:
            continue
        observed = req.observed.resources.get(endpoint_key(ordinal))
        if observed is None or not readiness_at(observed.resource.fields).true:
            return False
    return True


def _write_endpoint(ledger: Ledger, deployment: Deployment, cluster: PoolCluster, labels: Mapping[str, str]) -> None:
    key = routing_pool_key(cluster.name, ENDPOINT_PART)
    before = ledger.req.observed.resources.get(key)
    meta: dict[str, Any] = {
        "name": pool_endpoint_name(deployment.name, cluster.name),
        "namespace": deployment.namespace,
        "labels": dict(labels),
    }
    if cluster.ready == 0:
        meta["annotations"] = {SERVING_ANNOTATION: "false"}
    written = {"apiVersion": API_VERSION, "kind": "ModelEndpoint", "metadata": meta}
    if cluster.url is not None:
        spec = {"url": cluster.url, "host": pool_host(deployment.name, deployment.namespace), "weight": cluster.ready}
        if cluster.tls is not None and cluster.url.startswith("https://"):
            spec["tls"] = cluster.tls.spec()
        ledger.put(key, {**written, "spec": spec})
    elif before is None or not ledger.carry(key, "no replica there reports its gateway: kept without traffic", written):
        return
    ledger.mark(key, ready=cluster.ready > 0 and before is not None and readiness_at(before.resource.fields).true)


def _model_pool(
    deployment: Deployment,
    cluster: str,
    shape: _Shape,
    routing: Routing,
    info: ClusterRouting,
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """The cluster's ModelPool: everything its function needs to compose the pool, resolved here."""
    picker: dict[str, Any] = {
        "profile": str(routing.picker.profile),
        "failureMode": routing.picker.failure_mode,
        "replicas": routing.picker.replicas,
    }
    if routing.picker.profile is Profile.CUSTOM and routing.picker.config is not None:
        picker["config"] = dict(routing.picker.config)
    spec: dict[str, Any] = {
        "deploymentRef": {"name": deployment.name},
        "inferenceClusterRef": {"name": cluster},
        "providerConfigRef": {"name": info.provider_config},
        "role": shape.role,
        "port": shape.port,
        "nodesPerWorker": shape.nodes_per_worker,
        "engine": str(shape.engine),
        "endpointPicker": picker,
        "monitors": prometheus_of(info.prometheus).monitors,
        # KServe's own routes serve the pool (modelplane.backends.kserve); other backends need ours.
        "route": info.backend != "KServe",
    }
    if routing.priority is not None:
        spec["priority"] = routing.priority
    meta = {
        "name": pool_endpoint_name(deployment.name, cluster),
        "namespace": deployment.namespace,
        "labels": dict(labels),
    }
    return {"apiVersion": API_VERSION, "kind": "ModelPool", "metadata": meta, "spec": spec}


@dataclass(frozen=True)
class _Shape:
    role: str
    port: int
    nodes_per_worker: int
    engine: Engine


# A fleet's deployments mostly serve a few shapes: each is read once per process, keyed by its bytes.
_SHAPES: dict[tuple[str, bytes | None], _Shape] = {}
_SHAPES_LIMIT = 4096


def forget() -> None:
    """Forget the serving shapes already read (a cold read, for the bench)."""
    _SHAPES.clear()


def _serving_shape(spec: Mapping[str, Any]) -> _Shape:
    """The serving role of the deployment's spec (Struct fields): its pods' port, nodes per worker and engine."""
    role = "decode" if "decode" in spec else "unified"
    block = spec["decode"] if role == "decode" else spec.get("workers")
    key = (role, block.SerializeToString() if block is not None else None)
    return once(_SHAPES, key, partial(_read_shape, spec, role), _SHAPES_LIMIT)


def _read_shape(spec: Mapping[str, Any], role: str) -> _Shape:
    if role == "decode":
        block = json_format.MessageToDict(spec["decode"])
        workers = block.get("workers") if isinstance(block, dict) else None
    else:
        workers = json_format.MessageToDict(spec["workers"]) if "workers" in spec else None
    workers = workers if isinstance(workers, dict) else {}
    template = workers.get("template") or {}
    topology = workers.get("topology") or {}
    containers = (template.get("spec") or {}).get("containers") or [{}]
    ports = containers[0].get("ports") or []
    engine = engine_of(template)
    port = int(ports[0]["containerPort"]) if ports else SGLANG_PORT if engine is Engine.SGLANG else DEFAULT_PORT
    data, local = int(topology.get("data") or 1), int(topology.get("dataLocal") or 1)
    return _Shape(
        role=role,
        port=port,
        nodes_per_worker=int(topology.get("pipeline") or 1) * max(1, data // local),
        engine=engine,
    )
