"""The Usages that keep the cloud objects each replica runs on until the replica is gone.

A ModelReplica on a GKE, EKS or AKS cluster depends on the managed cluster (and EKS's
access entry) and on its node pools, which its InferenceCluster publishes in
``status.cloudResourceRefs``. Beside each desired replica, one Crossplane Usage per
such object (``modelplane.clusters.usage``): deleting the InferenceCluster, or the
pool, is then refused while the replica exists and replayed once it is gone.

A Usage lives exactly as long as its replica is desired, whatever way the call
desires it (placed, held, kept unread, leaving): once composed, it is kept while the
replica is, even if its cluster stops publishing the object or cannot be read, and it
is retired in the same call as its replica, never before. Crossplane deletes both;
the Usage waits for the replica to be gone (a composed Usage waits for its ``by``), so
retiring them together never exposes the object. An Existing cluster has no cloud
object: its replicas have none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from compose_model_deployment.desired import Deployment
from compose_model_deployment.fleet import CLUSTERS
from modelplane import protojson
from modelplane.clusters.usage import CloudRef, Replica, replica_usages
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.structs import string_at
from modelplane.names import replica_key, replica_key_ordinal, usage_key_ordinal
from modelplane.topology import Role

_KEPT = "its ModelReplica is still desired: the Usage is kept as long as the replica is"
_RETIRED = "its ModelReplica goes: the Usage goes with it (Crossplane deletes it once the replica is gone)"
# A Usage protects, it does not serve: the deployment's readiness is its replicas'.
_READY = True


def write_usages(ledger: Ledger, deployment: Deployment) -> None:
    """Compose the Usages of each desired replica, keep those composed before, retire those of replicas gone."""
    desired = ledger.rsp.desired.resources
    replicas = dict(_desired_replicas(desired, deployment))
    refs = _published(ledger.req, {r.cluster for r in replicas.values()})
    for replica in replicas.values():
        for key, usage in replica_usages(replica, refs.get(replica.cluster, ())).items():
            ledger.put(key, usage, ready=_READY)
    observed = sorted(k for k in ledger.req.observed.resources if usage_key_ordinal(k) is not None)
    kept = [k for k in observed if replica_key(_ordinal(k)) in desired]
    for key in ledger.keep(kept, _KEPT):
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


def _published(req: fnv1.RunFunctionRequest, clusters: set[str]) -> dict[str, list[CloudRef]]:
    """``status.cloudResourceRefs`` of each of ``clusters`` (entries that do not read are left out)."""
    out: dict[str, list[CloudRef]] = {}
    for struct in CLUSTERS.structs(req):
        # Most clusters publish no cloud object (Existing ones): looked at before the name, as every
        # cluster of the fleet is read at every call.
        status = struct.fields.get("status")
        listed = _list(status.struct_value.fields.get("cloudResourceRefs") if status is not None else None)
        if not listed:
            continue
        name = string_at(struct, "metadata", "name")
        if name not in clusters:
            continue
        refs = (CloudRef.of(protojson.struct_to_dict(v.struct_value)) for v in listed if v.HasField("struct_value"))
        out[name] = [r for r in refs if r is not None]
    return out


def _list(value: structpb.Value | None) -> list[structpb.Value]:
    return list(value.list_value.values) if value is not None and value.HasField("list_value") else []
