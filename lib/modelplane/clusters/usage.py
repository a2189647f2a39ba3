"""Keep what the ModelReplicas on a cluster run on and serve through until they are gone: Crossplane Usages.

Crossplane deletes an InferenceCluster's composed resources by garbage collection,
without calling its function, so the function cannot keep them as it keeps a pool
taken out of the spec. A ``protection.crossplane.io`` Usage can: Crossplane's usage
webhook refuses to delete the object it is ``of`` while the object it is ``by``
exists, and with ``replayDeletion`` deletes it once that object is gone.

The InferenceCluster publishes what its replicas use (``UsedRef``): its cloud objects
(``status.cloudResourceRefs``) and its ServingStack's anchor, the ConfigMap that co-owns
every object the stack composes (``status.stackResourceRefs``). The ModelDeployment
composes, beside each replica on the cluster, one Usage per object the replica depends
on (``replica_usages``): every object of no pool (the cluster, EKS's access entry, which
writes the kubeconfig the replica's remote objects are deleted through, the stack's
anchor), the system pool the stack runs on, and the node pools the replica runs on. The
Usage lives in the replica's namespace (``by`` must), and names the object's namespace
in ``of``, which a namespaced Usage allows together with ``by``. Only a namespaced object
can be kept so: a namespaced Usage does not protect a cluster-scoped one (Crossplane looks
a cluster-scoped object's Usages up among ClusterUsages only), and a ClusterUsage's ``by``
has no namespace, so it cannot be a ModelReplica. Hence the anchor, and not the
cluster-scoped ServingStack itself.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.clusters.types import SYSTEM_POOL
from modelplane.kinds import API_VERSION
from modelplane.names import CLUSTER_LABEL, DEPLOYMENT_LABEL, cluster_label, usage_key, usage_name

USAGE_API_VERSION = "protection.crossplane.io/v1beta1"
USAGE_KIND = "Usage"


@dataclass(frozen=True, order=True)
class UsedRef:
    """One object the ModelReplicas on an InferenceCluster use, as the cluster's status publishes it.

    Attributes:
        kind: The object's kind (first: a published list is sorted by kind, then name).
        name: Its name.
        api_version: Its API version.
        namespace: Its namespace (only a namespaced object can be kept by a replica's Usage).
        pool: The pool it is the node pool of; "" for what every replica on the cluster uses.
    """

    kind: str
    name: str
    api_version: str
    namespace: str
    pool: str = ""

    def status(self) -> dict[str, str]:
        """The ``status.cloudResourceRefs[]`` or ``status.stackResourceRefs[]`` entry."""
        out = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name, "namespace": self.namespace}
        if self.pool:
            out["pool"] = self.pool
        return out

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> UsedRef | None:
        """A published entry read back; None when a required field is missing or not a string."""
        fields = [entry.get(k) for k in ("kind", "name", "apiVersion", "namespace")]
        if not all(isinstance(f, str) and f for f in fields):
            return None
        kind, name, api_version, namespace = (str(f) for f in fields)
        pool = entry.get("pool")
        return cls(kind, name, api_version, namespace, pool if isinstance(pool, str) else "")


def published(refs: Iterable[UsedRef]) -> list[dict[str, str]]:
    """A published list: each object once, sorted by kind and name."""
    return [r.status() for r in sorted(set(refs))]


@dataclass(frozen=True)
class Replica:
    """What a replica's Usages are made from.

    Attributes:
        ordinal: Its ordinal in its deployment.
        name: Its name.
        namespace: Its namespace (the deployment's).
        deployment: Its ModelDeployment.
        cluster: The InferenceCluster it runs on.
        pools: The pools it runs on (one per role).
    """

    ordinal: int
    name: str
    namespace: str
    deployment: str
    cluster: str
    pools: Collection[str]


def replica_usages(replica: Replica, refs: Iterable[UsedRef]) -> dict[str, dict[str, Any]]:
    """The Usages keeping what ``replica`` uses, by composition key.

    Its cluster's objects of no pool, the system pool (the serving stack's controllers and the
    workload gateway run there) and the node pools of its own pools.

    Args:
        replica: The replica.
        refs: What its cluster publishes (its cloud objects, its stack's anchor).
    """
    out: dict[str, dict[str, Any]] = {}
    for ref in sorted(set(refs)):
        if ref.pool and ref.pool != SYSTEM_POOL and ref.pool not in replica.pools:
            continue
        out[usage_key(replica.ordinal, ref.kind, ref.name)] = {
            "apiVersion": USAGE_API_VERSION,
            "kind": USAGE_KIND,
            "metadata": {
                "name": usage_name(replica.name, ref.kind, ref.name),
                "namespace": replica.namespace,
                "labels": {DEPLOYMENT_LABEL: replica.deployment, CLUSTER_LABEL: cluster_label(replica.cluster)},
            },
            "spec": {
                "of": {
                    "apiVersion": ref.api_version,
                    "kind": ref.kind,
                    "resourceRef": {"name": ref.name, "namespace": ref.namespace},
                },
                "by": {"apiVersion": API_VERSION, "kind": "ModelReplica", "resourceRef": {"name": replica.name}},
                # Deleting the object (with the cluster, or a pool) while the replica runs is refused, and done
                # once it is gone.
                "replayDeletion": True,
            },
        }
    return out
