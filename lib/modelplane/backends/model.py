"""What a backend is given (a replica resolved against its cluster and classes) and what it returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.schedulers import Wrapping
from modelplane.topology import Footprint, Role


@dataclass(frozen=True)
class DeviceClaim:
    """One request of a role's DRA ResourceClaimTemplate.

    Attributes:
        name: The request's name (the class's device name for the accelerator, else the
            ``nodeSelector.devices[].name``).
        device_class: The DeviceClass on the workload cluster (the class device's ``deviceClassName``).
        count: Devices per node.
        cel: The user's CEL selector, passed through unchanged.
    """

    name: str
    device_class: str
    count: int
    cel: str


@dataclass(frozen=True)
class RoleWork:
    """One role of a replica, resolved: where it runs, its shape and its pods as the user wrote them.

    Attributes:
        role: The role.
        pool: The pool its pods are pinned to.
        footprint: Nodes per worker, GPUs per node, workers.
        parallelism: ``tensor``, ``pipeline``, ``data`` and ``dataLocal`` (defaults applied).
        template: ``workers.template`` exactly as written in the replica.
        claims: The DRA requests of one pod: the accelerator first, then the extra DRA devices.
    """

    role: Role
    pool: str
    footprint: Footprint
    parallelism: Mapping[str, int]
    template: Mapping[str, Any]
    claims: tuple[DeviceClaim, ...]


@dataclass(frozen=True)
class CacheMount:
    """A ModelCache's copy every pod of the replica mounts read-only: its claim on the cluster, and where."""

    claim: str
    path: str


@dataclass(frozen=True)
class ReplicaWork:
    """A replica, resolved against its cluster: the input of every backend.

    Attributes:
        name: The ModelReplica's name.
        namespace: Its namespace, which is also the namespace of its objects on the workload cluster.
        labels: Labels of every remote object and pod (replica, deployment).
        roles: Unified, or prefill then decode.
        scheduler: The cluster's ``spec.scheduler.type``.
        scheduler_settings: The cluster's ``spec.scheduler`` as written (each scheduler reads its own block).
        cluster: The InferenceCluster's name.
        prometheus: The cluster's ``spec.observability.prometheus`` (monitors unless None).
        routing: The replica's ``spec.routing`` as written (its deployment's).
        cache: The ModelCache copy its pods mount (None: none).
        model_uri: KServe's ``spec.model.uri``: a NodeLocal ModelCache's source, which KServe serves
            from the node-local copy at ``/mnt/models`` ("" for none; other backends refuse one).
    """

    name: str
    namespace: str
    labels: Mapping[str, str]
    roles: tuple[RoleWork, ...]
    scheduler: str = "None"
    scheduler_settings: Mapping[str, Any] = field(default_factory=dict)
    cluster: str = ""
    prometheus: str = "None"
    routing: Mapping[str, Any] = field(default_factory=dict)
    cache: CacheMount | None = None
    model_uri: str = ""

    @property
    def disaggregated(self) -> bool:
        """Whether the replica has prefill and decode roles."""
        return any(r.role is not Role.UNIFIED for r in self.roles)

    @property
    def serving_role(self) -> RoleWork:
        """The role that answers requests: unified, or decode (which reaches prefill itself)."""
        return next(r for r in self.roles if r.role in (Role.UNIFIED, Role.DECODE))


@dataclass(frozen=True)
class RolePods:
    """The pods of one role as the backend writes them: metadata and a complete PodSpec.

    Attributes:
        work: The role.
        name: The role's workload name on the workload cluster.
        labels: Every pod's labels (user's, Modelplane's, the scheduler's).
        annotations: Every pod's annotations.
        spec: The PodSpec (containers with the DRA claim, pool pinning, /dev/shm, scheduler name).
        wrapping: What the scheduler asked for.
        port: The engine's serving port.
    """

    work: RoleWork
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Mapping[str, Any]
    wrapping: Wrapping
    port: int


@dataclass(frozen=True)
class Remote:
    """One object for the workload cluster.

    Attributes:
        key: Its composition key (``modelplane.names.remote_key``), stable across calls.
        manifest: The object as it should exist on the workload cluster.
    """

    key: str
    manifest: Mapping[str, Any]
