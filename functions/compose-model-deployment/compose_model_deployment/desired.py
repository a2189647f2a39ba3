"""Write a ModelDeployment's desired ModelReplicas and ModelEndpoints from its schedule.

A placed replica copies the deployment's serving shape; a held one is carried with
its own observed spec (``Ledger.carry``), so a change that cannot run there is never
pushed down. Each
replica carries the revision of the shape it runs and why it was placed on its
cluster (``PLACED_BY_ANNOTATION``: written when it is placed, then kept as
observed). A replica's endpoint is composed once it reports where it is
reachable and kept while it is not Ready (annotated as not serving, so routes
give it no traffic but keep its Backend).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf import struct_pb2 as structpb

from compose_model_deployment.own import Own, OwnReplica, placed_by
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.structs import readiness_at
from modelplane.kinds import API_VERSION
from modelplane.names import (
    CLUSTER_LABEL,
    DEPLOYMENT_LABEL,
    MODEL_CACHE_LABEL,
    PLACED_BY_ANNOTATION,
    PREEMPTION_ANNOTATION,
    PREEMPTION_LOWER_PRIORITY,
    PRIORITY_ANNOTATION,
    PRIORITY_CLASS_ANNOTATION,
    REPLACES_ANNOTATION,
    REVISION_LABEL,
    SERVING_ANNOTATION,
    cache_label,
    cluster_label,
    endpoint_key,
    replica_key,
)
from modelplane.scheduling import Placement, Schedule
from modelplane.scheduling.priority import NO_PRIORITY, Priority
from modelplane.scheduling.revision import CACHE_KEY, CACHE_REF_KEY, SHAPE_KEYS, cache_mount
from modelplane.topology import Role


@dataclass(frozen=True)
class Deployment:
    """The deployment being composed: its identity, its spec as the user wrote it and its shape's revision."""

    name: str
    namespace: str
    spec: Mapping[str, Any]  # Struct fields
    revision: str
    priority: Priority = NO_PRIORITY
    preemptible: bool = False  # every FleetQuota of its namespace says preemption LowerPriority


# Whether a replica on a cluster has its own endpoint (routing mode Replica, or Pool while moving to it).
OwnEndpoint = Callable[[Placement], bool]
_POOL_SERVES = "routing mode Pool: its cluster's pool endpoint serves instead"


@dataclass(frozen=True)
class ReplicaRouting:
    """How the replicas route.

    Attributes:
        own_endpoint: Whether a replica has an endpoint of its own.
        pool_mode: Routing mode Pool: every replica joins its cluster's pool.
        joined: Mode Replica: the clusters whose pool still serves; a replica there keeps the
            ``spec.routing`` it was written with, so it stays in the pool until the pool goes.
    """

    own_endpoint: OwnEndpoint
    pool_mode: bool
    joined: frozenset[str] = frozenset()


def write_desired(
    ledger: Ledger, plan: Schedule, deployment: Deployment, own: Own, routing: ReplicaRouting
) -> set[str]:
    """Compose each placed replica and, where ``routing`` says so, its endpoint; return the Ready replicas."""
    ready: set[str] = set()
    for placement in plan.placements:
        observed = own.replicas.get(placement.ordinal)
        if placement.held is not None and observed is None:
            # Held, but its replica is not among the observed composed resources: nothing of the
            # replica to keep or write; an endpoint composed for it before stays, without traffic.
            _endpoint(ledger, placement, deployment, observed, routing.own_endpoint)
            continue
        key = replica_key(placement.ordinal)
        revision = observed.occupancy.revision if placement.held is not None and observed else deployment.revision
        # Labels are written fresh for held replicas too: an InferenceCluster selects its replicas by
        # CLUSTER_LABEL, so one composed before the label existed gets it on this reconcile.
        labels = {
            DEPLOYMENT_LABEL: deployment.name,
            REVISION_LABEL: revision,
            CLUSTER_LABEL: cluster_label(placement.cluster),
        }
        cache = _cache_name(deployment.spec if placement.held is None or observed is None else observed.spec.fields)
        if cache:
            # Its ModelCache stages a copy where the replica is (placement Follow), and keeps it while it runs.
            labels[MODEL_CACHE_LABEL] = cache_label(cache)
        meta = {"name": placement.replica, "namespace": deployment.namespace, "labels": labels}
        annotations = {}
        if placement.replaces:
            annotations[REPLACES_ANNOTATION] = placement.replaces
        recorded = _placed_by(placement, observed)
        if recorded is not None:
            annotations[PLACED_BY_ANNOTATION] = recorded
        if deployment.priority.name:
            # A pool and a quota order who keeps capacity by it; a quota counts use by the class's name.
            annotations[PRIORITY_ANNOTATION] = str(deployment.priority.value)
            annotations[PRIORITY_CLASS_ANNOTATION] = deployment.priority.name
        if deployment.preemptible:
            # Its cluster may give it, serving, to a higher priority (which its deployment then moves).
            annotations[PREEMPTION_ANNOTATION] = PREEMPTION_LOWER_PRIORITY
        if annotations:
            meta["annotations"] = annotations
        written = {"apiVersion": API_VERSION, "kind": "ModelReplica", "metadata": meta}
        if placement.held is not None and observed is not None:
            # It keeps what it runs: its own spec, unchanged.
            ledger.carry(key, f"held: {placement.held.message}", written)
        else:
            ledger.put(key, {**written, "spec": {}})
            spec = ledger.rsp.desired.resources[key].resource["spec"]
            _write_replica_spec(spec, deployment.spec, placement, deployment.name, pool_mode=routing.pool_mode)
            if not routing.pool_mode and placement.cluster in routing.joined and observed is not None:
                _keep_routing(spec, observed)
        serving = observed is not None and observed.occupancy.ready
        ledger.mark(key, ready=serving)
        if serving:
            ready.add(placement.replica)
        _endpoint(ledger, placement, deployment, observed, routing.own_endpoint)
    return ready


def _endpoint(
    ledger: Ledger, placement: Placement, deployment: Deployment, observed: OwnReplica | None, own: OwnEndpoint
) -> None:
    if own(placement):
        _write_endpoint(ledger, placement, deployment, observed)
    else:
        ledger.remove([endpoint_key(placement.ordinal)], _POOL_SERVES)


def _placed_by(placement: Placement, observed: OwnReplica | None) -> str | None:
    """Why the replica runs where it runs: decided now when it is placed now, else as recorded when it was.

    A recorded value is kept exactly as observed, never rewritten; a replica composed before
    reasons were recorded gets none.
    """
    if placement.decision is not None:
        return placed_by(placement.decision)
    return observed.placed_by if observed is not None else None


def _write_endpoint(ledger: Ledger, placement: Placement, deployment: Deployment, observed: OwnReplica | None) -> None:
    key = endpoint_key(placement.ordinal)
    before = ledger.req.observed.resources.get(key)
    serving = observed is not None and observed.occupancy.ready
    meta: dict[str, Any] = {
        "name": placement.replica,
        "namespace": deployment.namespace,
        "labels": {DEPLOYMENT_LABEL: deployment.name},
    }
    if not serving:
        meta["annotations"] = {SERVING_ANNOTATION: "false"}
    if observed is not None and observed.url is not None:
        spec: dict[str, Any] = {"url": observed.url, "replicaRef": {"name": placement.replica}}
        if observed.host is not None:
            # Replicas share their cluster's gateway address; the Host header tells them apart.
            spec["host"] = observed.host
        if observed.tls is not None and observed.url.startswith("https://"):
            # The cluster's gateway CA, which the endpoint's BackendTLSPolicy verifies the gateway against.
            spec["tls"] = observed.tls.spec()
        ledger.put(key, {"apiVersion": API_VERSION, "kind": "ModelEndpoint", "metadata": meta, "spec": spec})
    elif before is not None and "spec" in before.resource.fields:
        # The replica stopped reporting where it is reachable (not Ready): keep its endpoint, without traffic.
        written = {"apiVersion": API_VERSION, "kind": "ModelEndpoint", "metadata": meta}
        ledger.carry(key, "its replica is not reachable: kept without traffic", written)
    else:
        return
    ledger.mark(key, ready=serving and before is not None and readiness_at(before.resource.fields).true)


def _write_replica_spec(
    out: structpb.Struct, spec: Mapping[str, Any], placement: Placement, deployment: str, *, pool_mode: bool
) -> None:
    # The serving shape is copied from the deployment's Struct as it is: no conversion to dicts and back.
    # (Copying the deployment's spec is composing, not keeping: ``Ledger.carry`` keeps observed specs.)
    out.update({"inferenceClusterRef": {"name": placement.cluster}, "deploymentRef": {"name": deployment}})
    ref = spec.get(CACHE_REF_KEY)
    if ref is not None and ref.HasField("struct_value"):
        # The mount path defaulted: each replica reads the cache itself (compose-model-replica).
        out[CACHE_KEY] = cache_mount(json_format.MessageToDict(ref.struct_value))
    if pool_mode:
        # In routing mode Pool a replica on a KServe cluster joins the pool and hands the picker's config to
        # KServe: it is told so explicitly (a replica without spec.routing routes as its own endpoint).
        out["routing"] = {"mode": "Pool"}
        if "routing" in spec:
            out["routing"].update(json_format.MessageToDict(spec["routing"]))
    unified = placement.pool(Role.UNIFIED)
    if unified is not None:
        _copy_shape(out, spec)
        out["poolName"] = unified
    for role in (Role.PREFILL, Role.DECODE):
        pool = placement.pool(role)
        if pool is not None:
            out[str(role)] = {}
            block = out[str(role)]
            source = spec.get(str(role))
            if source is not None and source.HasField("struct_value"):
                _copy_shape(block, source.struct_value.fields)
            block["poolName"] = pool


def _cache_name(spec: Mapping[str, Any]) -> str:
    """The ModelCache a deployment's (``modelCacheRef``) or a replica's (``modelCache``) spec names ("" for none)."""
    for key in (CACHE_REF_KEY, CACHE_KEY):
        value = spec.get(key)
        if value is not None and value.HasField("struct_value"):
            name = value.struct_value.fields.get("name")
            return name.string_value if name is not None else ""
    return ""


def _keep_routing(out: structpb.Struct, observed: OwnReplica) -> None:
    """Carry the replica's observed ``spec.routing`` (how it joins its cluster's pool), when it has one."""
    routing = observed.spec.fields.get("routing")
    if routing is not None:
        out.fields["routing"].CopyFrom(routing)


def _copy_shape(out: structpb.Struct, spec: Mapping[str, Any]) -> None:
    for key in SHAPE_KEYS:
        if key in spec:
            out.fields[key].CopyFrom(spec[key])
