"""Serving backends: the objects a ModelReplica puts on its workload cluster.

One module per backend and one row in ``BACKENDS`` (by the cluster's
``spec.serving.backend``). Every backend gets the same namespace, DRA
ResourceClaimTemplates and scheduler objects from ``compose_remote``; a backend
only writes the workloads that run the pods and what reaches them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from modelplane.backends import kserve, native
from modelplane.backends.model import DeviceClaim, Remote, ReplicaWork, RolePods, RoleWork
from modelplane.backends.monitor import replica_monitor
from modelplane.backends.pods import claim_template, namespace, role_pods
from modelplane.backends.status import ObservedRemote, RemoteStatus, lift_status
from modelplane.names import remote_key, workload_name
from modelplane.schedulers import Gang, scheduler_for

__all__ = [
    "BACKENDS",
    "Backend",
    "DeviceClaim",
    "ObservedRemote",
    "Remote",
    "RemoteStatus",
    "ReplicaWork",
    "RoleWork",
    "UnknownBackendError",
    "UnsupportedModelUriError",
    "compose_remote",
    "lift_status",
]

Backend = Callable[[ReplicaWork, Sequence[RolePods]], list[Remote]]

# By the InferenceCluster's spec.serving.backend.
BACKENDS: dict[str, Backend] = {
    "KServe": kserve.build,
    "Native": native.build,
}


class UnknownBackendError(LookupError):
    """A serving backend no module implements."""


class UnsupportedModelUriError(ValueError):
    """A model URI (a NodeLocal ModelCache's) for a backend that cannot serve one."""


# The backends that serve ReplicaWork.model_uri (KServe's node-local model caches).
_SERVE_MODEL_URI = frozenset({"KServe"})


def compose_remote(work: ReplicaWork, backend: str) -> tuple[Remote, ...]:
    """Every object of a replica for its workload cluster, each under a stable composition key.

    Args:
        work: The replica, resolved against its cluster and classes.
        backend: The cluster's ``spec.serving.backend`` (empty means KServe, the default).

    Returns:
        The namespace, then per role the claim template and the scheduler's objects, then the
        backend's workloads, then (on a cluster with the prometheus-operator) the engines' PodMonitor.

    Raises:
        UnknownBackendError: No backend of that name.
        UnknownSchedulerError: The cluster's scheduler type is not known.
        SchedulerSettingsError: The scheduler's settings are incomplete.
        UnsupportedModelUriError: A model URI for a backend other than KServe.
    """
    build = BACKENDS.get(backend or "KServe")
    if build is None:
        msg = f"spec.serving.backend: unknown backend {backend!r} (known: {', '.join(sorted(BACKENDS))})"
        raise UnknownBackendError(msg)
    if work.model_uri and (backend or "KServe") not in _SERVE_MODEL_URI:
        msg = (
            f"spec.modelCacheRef: a NodeLocal ModelCache needs a KServe cluster; InferenceCluster {work.cluster}"
            f" serves with {backend}"
        )
        raise UnsupportedModelUriError(msg)
    wrap = scheduler_for(work.scheduler).wrap
    out = [Remote(remote_key("namespace"), namespace(work))]
    roles = []
    for role in work.roles:
        name = workload_name(work.name, role.role)
        gang = Gang(name, work.namespace, role.role, role.footprint.node_slots, dict(work.labels))
        wrapping = wrap(gang, work.scheduler_settings)
        out.append(Remote(remote_key("claim", str(role.role)), claim_template(work, role)))
        out.extend(
            Remote(remote_key(str(o.get("kind", "object")).lower(), str(role.role)), o) for o in wrapping.objects
        )
        roles.append(role_pods(work, role, wrapping))
    out.extend(build(work, roles))
    monitor = replica_monitor(work, roles)
    if monitor is not None:
        out.append(monitor)
    return tuple(out)
