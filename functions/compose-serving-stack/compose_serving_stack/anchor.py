"""The stack's anchor: a ConfigMap that co-owns what the stack composes, which ModelReplicas keep with Usages.

Deleting an InferenceCluster deletes its ServingStack by garbage collection, and with
it every Helm release and gateway Object the stack composed, under ModelReplicas still
serving there. A replica cannot keep the ServingStack with a Usage: the stack is
cluster-scoped, a namespaced Usage does not protect a cluster-scoped object (Crossplane's
usage webhook looks its Usages up among ClusterUsages only), and a ClusterUsage's ``by``
cannot name a namespaced ModelReplica.

So the stack composes a ConfigMap in ``CONTROL_PLANE_NAMESPACE``, its anchor, and makes it
a second owner of every object it composes there. Kubernetes' garbage collector deletes an
object only once all its owners are gone: with the ServingStack gone, its releases and
Objects stay as long as the anchor does. The stack publishes the anchor
(``status.anchorRef``), its InferenceCluster republishes it (``status.stackResourceRefs``),
and each ModelReplica on the cluster keeps it with a Usage (``modelplane.clusters.usage``):
the stack is uninstalled once the last replica there is gone. A user's change to the stack
(a component Disabled, TLS off) deletes what it no longer composes at once: Crossplane
deletes it explicitly, which a second owner does not hold.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import struct_pb2 as structpb

from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.structs import string_at
from modelplane.names import CONTROL_PLANE_NAMESPACE, STACK_ANCHOR_KEY, stack_anchor

_API_VERSION = "v1"
_KIND = "ConfigMap"
_WHY = (
    "Co-owns every object ServingStack {stack} composes in {namespace}: they are garbage-collected only "
    "once it is gone too. The ModelReplicas on the stack's InferenceCluster keep it with Usages, so "
    "deleting the cluster uninstalls the stack only once they have moved."
)


def write_anchor(ledger: Ledger, stack: str) -> None:
    """Compose the anchor of ServingStack ``stack``."""
    manifest = {
        "apiVersion": _API_VERSION,
        "kind": _KIND,
        "metadata": {"name": stack_anchor(stack), "namespace": CONTROL_PLANE_NAMESPACE},
        "data": {"servingStack": stack, "about": _WHY.format(stack=stack, namespace=CONTROL_PLANE_NAMESPACE)},
    }
    # An inert object: ready once it is there (it is, once applied).
    ledger.put(STACK_ANCHOR_KEY, manifest, ready=True)


def anchor_stack(ledger: Ledger) -> dict[str, str] | None:
    """Make the anchor a second owner of every other object the call desires in its namespace.

    Runs after everything else the call composed or kept, whatever path it took (the anchor
    composed, or kept as observed with the rest), so nothing is left with a single owner; the
    owner reference waits for the anchor's UID. Returns ``status.anchorRef`` once the anchor is
    observed and still desired, else None.
    """
    desired = ledger.rsp.desired.resources.get(STACK_ANCHOR_KEY)
    if desired is None:
        return None
    # Inert, kept or composed: ready once it is there.
    ledger.mark(STACK_ANCHOR_KEY, ready=True)
    observed = ledger.req.observed.resources.get(STACK_ANCHOR_KEY)
    if observed is None:
        return None
    name = string_at(desired.resource, "metadata", "name")
    uid = string_at(observed.resource, "metadata", "uid")
    if not name:
        return None
    if uid:
        owner = {"apiVersion": _API_VERSION, "kind": _KIND, "name": name, "uid": uid}
        for key, other in ledger.rsp.desired.resources.items():
            if (
                key != STACK_ANCHOR_KEY
                and string_at(other.resource, "metadata", "namespace") == CONTROL_PLANE_NAMESPACE
            ):
                _own(other.resource, owner)
    return {"apiVersion": _API_VERSION, "kind": _KIND, "name": name, "namespace": CONTROL_PLANE_NAMESPACE}


def _own(body: structpb.Struct, owner: dict[str, Any]) -> None:
    """Add ``owner`` to ``body``'s owner references unless one with its UID is there already."""
    refs = body.fields["metadata"].struct_value.fields["ownerReferences"].list_value
    for value in refs.values:
        uid = value.struct_value.fields.get("uid") if value.HasField("struct_value") else None
        if uid is not None and uid.string_value == owner["uid"]:
            return
    refs.values.add().struct_value.update(owner)
