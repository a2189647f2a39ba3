"""A cloud InferenceCluster (GKE, EKS, AKS): the managed cluster and one node pool per ``spec.nodePools[]`` entry.

Each pool is shaped by its class's provisioning block (``modelplane.clusters``).
A pool whose class is missing or provisions for another cloud is refused, and
what was composed for it is kept; a pool taken out of the spec is kept while
ModelReplicas run on it (``removing``), and removed once none does, as the whole
cloud cluster is once the source is Existing: the user's change. ``published_refs``
lists every cloud object the call composes or keeps for ``status.cloudResourceRefs``,
so each ModelReplica's Usages keep them until it is gone, even when the cluster is
deleted (``modelplane.clusters.usage``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.clusters import compose_cloud, plan_pools
from modelplane.clusters.usage import UsedRef, published
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.structs import string_at
from modelplane.names import CONTROL_PLANE_NAMESPACE, is_cloud_key, pool_key, pool_of_key
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import Spec


def write_cloud(
    ledger: Ledger, name: str, spec: Spec, classes: Mapping[str, InferenceClass], removing: Collection[str] = ()
) -> Condition | None:
    """Compose a cloud cluster and its pools, and say whether they are provisioned; None for an Existing one.

    The pools in ``removing`` (out of the spec, ModelReplicas still on them) are kept as observed.
    """
    source = spec.cluster.source
    if source == "Existing":
        ledger.remove_unwritten(is_cloud_key, lambda _: "spec.cluster.source is Existing")
        return None
    # The builders copy the provider's settings and each class's provisioning block as the user wrote them.
    class_specs = {
        n: c.spec.model_dump(mode="json", by_alias=True, exclude_unset=True) for n, c in classes.items() if c.spec
    }
    written = getattr(spec.cluster, source.lower())
    settings = written.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True) if written else {}
    plans, problems = plan_pools(source, spec.nodePools or [], class_specs)
    cloud = compose_cloud(source, name=name, namespace=CONTROL_PLANE_NAMESPACE, settings=settings, pools=plans)
    waiting = []
    for key, obj in sorted(cloud.resources.items()):
        ready = inputs.ready(ledger.req, ledger.rsp, key).true
        ledger.put(key, obj, ready=ready)
        if not ready:
            waiting.append(f"{obj['kind']} {obj['metadata']['name']}")
    ledger.keep([pool_key(p.pool) for p in problems], "its pool's class cannot provision it")
    ledger.keep([pool_key(p) for p in removing], "ModelReplicas still run on its pool: it is deleted once they move")
    ledger.remove_unwritten(
        is_cloud_key,
        lambda key: (
            "its pool is no longer in spec.nodePools"
            if key.startswith(pool_key(""))
            else f"spec.cluster.source is {source}"
        ),
    )
    if problems:
        message = "; ".join(f"pool {p.pool} is not provisioned: {p.message}" for p in problems)
        return Condition(Type.PROVISIONED, Status.FALSE, Reason(problems[0].reason), message)
    if waiting:
        return Condition(Type.PROVISIONED, Status.FALSE, Reason.PROVISIONING, f"waiting for {', '.join(waiting)}")
    return Condition(
        Type.PROVISIONED, Status.TRUE, Reason.PROVISIONED, f"{source} cluster and {len(plans)} pool(s) ready"
    )


def published_refs(rsp: fnv1.RunFunctionResponse) -> list[dict[str, str]]:
    """``status.cloudResourceRefs``: every cloud object the call desires, composed or kept as observed.

    Read from the desired state whatever path the call took (a kept pool, an input it waits for), so a
    replica's Usages name what the cluster really has; empty for an Existing cluster.
    """
    refs = []
    for key, desired in rsp.desired.resources.items():
        if not is_cloud_key(key):
            continue
        body = desired.resource
        ref = UsedRef(
            kind=string_at(body, "kind"),
            name=string_at(body, "metadata", "name"),
            api_version=string_at(body, "apiVersion"),
            namespace=string_at(body, "metadata", "namespace"),
            pool=pool_of_key(key) or "",
        )
        if ref.kind and ref.name and ref.api_version and ref.namespace:
            refs.append(ref)
    return published(refs)
