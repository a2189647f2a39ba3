"""The Usages that keep what each replica runs on and serves through until the replica is gone.

A ModelReplica depends on objects its InferenceCluster composes and publishes: on a GKE,
EKS or AKS cluster the managed cluster (and EKS's access entry), the system pool and its
own node pools (``status.cloudResourceRefs``); on every cluster the ServingStack's anchor,
which co-owns the stack's Helm releases and gateway Objects (``status.stackResourceRefs``).
Beside each desired replica, one Crossplane Usage per such object
(``modelplane.clusters.usage``): deleting the InferenceCluster, or the pool, is then
refused while the replica exists and replayed once it is gone.

A Usage lives exactly as long as its replica is desired, whatever way the call
desires it (placed, held, kept unread, leaving): once composed, it is kept while the
replica is, even if its cluster stops publishing the object or cannot be read, and it
is retired in the same call as its replica, never before. A replica the call neither
composes nor lets go (not observed, and not placed again for want of an input) keeps
its Usages while the API server lists it. Crossplane deletes both;
the Usage waits for the replica to be gone (a composed Usage waits for its ``by``), so
retiring them together never exposes the object.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from compose_model_deployment.desired import Deployment
from modelplane import protojson
from modelplane.clusters.usage import Replica, UsedRef, replica_usages
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.structs import string_at
from modelplane.names import replica_key, replica_key_ordinal, replica_name, usage_key_ordinal
from modelplane.topology import Role

_KEPT = "its ModelReplica is still desired: the Usage is kept as long as the replica is"
_UNSURE = "its ModelReplica is not composed in this call but still exists: the Usage stays while it does"
_RETIRED = "its ModelReplica goes: the Usage goes with it (Crossplane deletes it once the replica is gone)"
# What a cluster publishes its replicas use: its cloud objects, its ServingStack's anchor.
_PUBLISHED = ("cloudResourceRefs", "stackResourceRefs")
# A Usage protects, it does not serve: the deployment's readiness is its replicas'.
_READY = True


def write_usages(
    ledger: Ledger, deployment: Deployment, clusters: Mapping[str, structpb.Struct], listed: Collection[str]
) -> None:
    """Compose the Usages of each desired replica, keep those composed before, retire those of replicas gone.

    Args:
        ledger: The call's ledger, every replica desired, kept or removed already.
        deployment: The deployment.
        clusters: Every InferenceCluster as it came, by name (``Fleet.clusters``).
        listed: The names of the deployment's ModelReplicas the API server lists (they exist).
    """
    desired = ledger.rsp.desired.resources
    replicas = dict(_desired_replicas(desired, deployment))
    refs = _published(clusters, {r.cluster for r in replicas.values()})
    for replica in replicas.values():
        for key, usage in replica_usages(replica, refs.get(replica.cluster, ())).items():
            ledger.put(key, usage, ready=_READY)
    observed = sorted(k for k in ledger.req.observed.resources if usage_key_ordinal(k) is not None)
    kept = [k for k in observed if replica_key(_ordinal(k)) in desired]
    # A replica neither desired nor let go in this call (not observed, and not placed again for want of an
    # input) may still run: while it is listed, its Usages stay (one whose replica is gone would hold for ever).
    unsure = [
        k
        for k in observed
        if k not in kept
        and replica_key(_ordinal(k)) not in ledger.removed
        and replica_name(deployment.name, _ordinal(k)) in listed
    ]
    for key in ledger.keep(kept, _KEPT) + ledger.keep(unsure, _UNSURE):
        ledger.mark(key, ready=_READY)
    ledger.remove([k for k in observed if k not in desired], _RETIRED)


def _ordinal(key: str) -> int:
    ordinal = usage_key_ordinal(key)
    return -1 if ordinal is None else ordinal


def _desired_replicas(desired: Mapping[str, fnv1.Resource], deployment: Deployment) -> Iterable[tuple[int, Replica]]:
    """Each desired replica whose name and cluster read, with the pools of its roles."""
    for key in sorted(desired):
        ordinal = replica_key_ordinal(key)
        if ordinal is None:
            continue
        body = desired[key].resource
        name, cluster = string_at(body, "metadata", "name"), string_at(body, "spec", "inferenceClusterRef", "name")
        if not name or not cluster:
            continue  # a replica kept unread: the Usages composed for it before are kept as they are
        pools = {string_at(body, "spec", "poolName")} | {
            string_at(body, "spec", str(role), "poolName") for role in (Role.PREFILL, Role.DECODE)
        }
        yield ordinal, Replica(ordinal, name, deployment.namespace, deployment.name, cluster, frozenset(pools - {""}))


def _published(clusters: Mapping[str, structpb.Struct], hosts: set[str]) -> dict[str, list[UsedRef]]:
    """What each of ``hosts`` publishes its replicas use (entries that do not read are left out)."""
    out: dict[str, list[UsedRef]] = {}
    for name in sorted(hosts):
        struct = clusters.get(name)
        status = struct.fields.get("status") if struct is not None else None
        if status is None or not status.HasField("struct_value"):
            continue
        published = status.struct_value.fields
        listed = [v for f in _PUBLISHED for v in _list(published.get(f)) if v.HasField("struct_value")]
        refs = (UsedRef.of(protojson.struct_to_dict(v.struct_value)) for v in listed)
        out[name] = [r for r in refs if r is not None]
    return out


def _list(value: structpb.Value | None) -> list[structpb.Value]:
    return list(value.list_value.values) if value is not None and value.HasField("list_value") else []
