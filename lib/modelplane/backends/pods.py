"""The pieces every backend shares: the namespace, a role's DRA claim template and its pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.backends.model import CacheMount, ReplicaWork, RolePods, RoleWork
from modelplane.names import POOL_LABEL, REPLICA_LABEL, ROLE_LABEL, workload_name
from modelplane.schedulers import Wrapping

CLAIM_NAME = "accelerators"  # the pod's resourceClaims[] entry the engine container uses
SHM_VOLUME = "dshm"
SHM_PATH = "/dev/shm"  # noqa: S108 - the mount point of shared memory, not a temporary file
CACHE_VOLUME = "model-cache"  # a ModelCache's copy (reserved: admission refuses a user volume of that name)
DEFAULT_PORT = 8000  # the engine's port when its first container declares none (vLLM's default)
# Modelplane fields of the template's spec that are not PodSpec fields.
_NOT_POD_SPEC = frozenset({"sharedMemorySize"})


def namespace(work: ReplicaWork) -> dict[str, Any]:
    """The replica's namespace on the workload cluster (named like its namespace on the control plane)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": work.namespace}}


def selector(work: ReplicaWork, role: RoleWork) -> dict[str, str]:
    """The labels that select a role's pods."""
    return {REPLICA_LABEL: work.name, ROLE_LABEL: str(role.role)}


def claim_template(work: ReplicaWork, role: RoleWork) -> dict[str, Any]:
    """The role's DRA ResourceClaimTemplate: per pod, the accelerators of one node and the extra DRA devices."""
    requests = [
        {
            "name": c.name,
            "exactly": {
                "deviceClassName": c.device_class,
                "count": c.count,
                "selectors": [{"cel": {"expression": c.cel}}],
            },
        }
        for c in role.claims
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": workload_name(work.name, role.role),
            "namespace": work.namespace,
            "labels": {**work.labels, **selector(work, role)},
        },
        "spec": {"spec": {"devices": {"requests": requests}}},
    }


def _port(containers: list[Mapping[str, Any]]) -> int:
    ports = containers[0].get("ports") or [] if containers else []
    return int(ports[0]["containerPort"]) if ports else DEFAULT_PORT


def _container(container: Mapping[str, Any], cache: CacheMount | None, *, engine: bool) -> dict[str, Any]:
    out = dict(container)
    # /dev/shm first, then the cache's copy, then the user's mounts; admission refuses a user mount
    # at /dev/shm, and should one slip through (or one sit at the cache's path), Modelplane's wins so
    # the pod stays valid.
    taken = {SHM_PATH, cache.path} if cache is not None else {SHM_PATH}
    user = [
        m for m in container.get("volumeMounts") or [] if isinstance(m, Mapping) and m.get("mountPath") not in taken
    ]
    ours: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": SHM_PATH}]
    if cache is not None:
        ours.append({"name": CACHE_VOLUME, "mountPath": cache.path, "readOnly": True})
    out["volumeMounts"] = [*ours, *user]
    if engine:
        resources = dict(out.get("resources") or {})
        resources["claims"] = [{"name": CLAIM_NAME}]
        out["resources"] = resources
    return out


def _volumes(user_spec: Mapping[str, Any], cache: CacheMount | None) -> list[dict[str, Any]]:
    """The shared-memory volume, the cache's copy, then the user's (by name: Modelplane's win, as for the mounts)."""
    shm: dict[str, Any] = {"medium": "Memory"}
    if user_spec.get("sharedMemorySize") is not None:
        shm["sizeLimit"] = user_spec["sharedMemorySize"]
    ours: list[dict[str, Any]] = [{"name": SHM_VOLUME, "emptyDir": shm}]
    if cache is not None:
        ours.append({"name": CACHE_VOLUME, "persistentVolumeClaim": {"claimName": cache.claim, "readOnly": True}})
    names = {v["name"] for v in ours}
    user = [v for v in user_spec.get("volumes") or [] if isinstance(v, Mapping) and v.get("name") not in names]
    return [*ours, *(dict(v) for v in user)]


def role_pods(work: ReplicaWork, role: RoleWork, wrapping: Wrapping) -> RolePods:
    """The pods of ``role``: the user's template with the DRA claim, pool pinning, /dev/shm and the scheduler.

    Everything the user wrote passes through unchanged (args, env and its secret references,
    image pull secrets, probes, init containers, security contexts, priority class, affinity);
    the first container (the engine) gets the claim. Merged with what Modelplane adds:

    - volumes and every container's (init containers too) volumeMounts: /dev/shm's first, then
      the ModelCache copy's (read-only, when the replica mounts one), then the user's;
    - affinity: the user's as written; the pool pinning is the ``nodeSelector``, which
      Kubernetes requires together with it, so no affinity can take the pods out of their pool.
    """
    template = role.template
    meta = template.get("metadata") or {}
    user_spec = template.get("spec") or {}
    name = workload_name(work.name, role.role)
    containers = list(user_spec.get("containers") or [])
    spec: dict[str, Any] = {k: v for k, v in user_spec.items() if k not in _NOT_POD_SPEC}
    spec["containers"] = [_container(c, work.cache, engine=i == 0) for i, c in enumerate(containers)]
    if user_spec.get("initContainers"):
        spec["initContainers"] = [
            _container(c, work.cache, engine=False) for c in user_spec["initContainers"] if isinstance(c, Mapping)
        ]
    spec["nodeSelector"] = {POOL_LABEL: role.pool}
    spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": name}]
    spec["volumes"] = _volumes(user_spec, work.cache)
    if wrapping.scheduler_name:
        spec["schedulerName"] = wrapping.scheduler_name
    labels = {**(meta.get("labels") or {}), **work.labels, **selector(work, role), **wrapping.pod_labels}
    annotations = {**(meta.get("annotations") or {}), **wrapping.pod_annotations}
    return RolePods(
        work=role,
        name=name,
        labels=labels,
        annotations=annotations,
        spec=spec,
        wrapping=wrapping,
        port=_port(containers),
    )


def pod_template(pods: RolePods, extra_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A PodTemplateSpec of the role's pods (Deployment, LeaderWorkerSet)."""
    meta: dict[str, Any] = {"labels": {**pods.labels, **(extra_labels or {})}}
    if pods.annotations:
        meta["annotations"] = dict(pods.annotations)
    return {"metadata": meta, "spec": dict(pods.spec)}
