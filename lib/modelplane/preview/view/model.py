"""The plain-data view of a settled fleet: what the tables print and ``--output json|yaml`` writes.

Frozen dataclasses of strings and numbers, one per thing a person looks at: a
class, a cluster and its pools, a deployment and its replicas, a service and its
backends, a function's message. ``FleetView`` holds them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Condition:
    """One condition of an object: its status, reason and message."""

    type: str
    status: str = "Unknown"
    reason: str = ""
    message: str = ""

    @property
    def true(self) -> bool:
        """Whether the condition holds."""
        return self.status == "True"


@dataclass(frozen=True)
class ClassView:
    """One InferenceClass."""

    name: str
    gpus_per_node: int | None
    product: str
    valid: Condition


@dataclass(frozen=True)
class PoolView:
    """One node pool's GPUs, as the scheduler counts them."""

    pool: str
    class_name: str
    nodes: int
    gpus_per_node: int
    declared: int
    observed: int | None  # GPUs in use a cluster scheduler (KAI, Kueue) reports; None when none does
    in_use: int
    free: int
    source: str
    overcommitted: int = 0


@dataclass(frozen=True)
class ReleaseView:
    """One Helm release, on the cluster it installs into."""

    name: str
    chart: str
    version: str
    namespace: str
    ready: bool | None  # None: nothing reported yet


@dataclass(frozen=True)
class StackView:
    """A workload cluster's ServingStack."""

    name: str
    ready: Condition
    gateway: str


@dataclass(frozen=True)
class ClusterView:
    """One InferenceCluster: what it is, its pools, its stack and its releases."""

    name: str
    source: str
    scheduler: str
    backend: str
    cordoned: bool
    ready: Condition
    labels: dict[str, str]
    pools: tuple[PoolView, ...]
    stack: StackView | None
    releases: tuple[ReleaseView, ...]
    cost: str = ""  # status.cost: what its replicas cost per hour, e.g. "32.80 USD/h"; "" without a price


@dataclass(frozen=True)
class RoleView:
    """One role of a replica: where it runs and what it takes."""

    role: str  # unified, prefill or decode
    pool: str
    gpus: int
    gpus_per_node: int
    nodes: int  # nodes the role spans (per worker x workers)


@dataclass(frozen=True)
class ReplicaView:
    """One ModelReplica."""

    name: str
    cluster: str
    roles: tuple[RoleView, ...]
    ready: bool

    @property
    def gpus(self) -> int:
        """GPUs the replica takes over its roles."""
        return sum(r.gpus for r in self.roles)


@dataclass(frozen=True)
class DeploymentView:
    """One ModelDeployment: how many replicas it wants, has placed and has serving."""

    name: str  # namespace/name
    desired: int
    placed: int
    ready: int
    gpus_per_replica: int | None
    shape: str  # e.g. "TP4", "TP8 PP2" or "prefill TP8 + decode TP8"
    scheduled: Condition
    replicas: tuple[ReplicaView, ...]
    cost: str = ""  # status.cost: what its placed replicas cost per hour, e.g. "32.80 USD/h"; "" without a price


@dataclass(frozen=True)
class BackendView:
    """One backend of a service's route and its share of the traffic (``backends.route_of``)."""

    name: str  # the endpoint (its Backend), also when referenced through a fallback copy or an AIServiceBackend
    weight: int
    share: float  # percent of its priority level's weight: the primary's, or the per-request fallback's
    tier: int | None = None  # its spec.endpoints[].tier; None when the service has one tier
    fallback: bool = False  # sent to through the service's fallback Backend copy: Envoy's per-request fallback
    priority: int | None = None  # its backendRef priority on the service's AIGatewayRoute, if any


@dataclass(frozen=True)
class ServiceView:
    """One ModelService and where its route sends traffic."""

    name: str
    address: str
    path: str
    routed: Condition
    backends: tuple[BackendView, ...]
    # Selectors of spec.endpoints[] that match nothing its namespace has or will have, each said in full.
    unmatched: tuple[str, ...] = ()
    # Who may call it: its gateway's spec.auth and its own spec.access.clients, in a few words.
    access: str = "-"
    # Its spec.limits, in a few words (``services.limits_of``).
    limits: str = "-"


@dataclass(frozen=True)
class PoolRouteView:
    """A deployment's InferencePool on one cluster (routing mode Pool): its picker, weight and monitors."""

    deployment: str  # namespace/name
    cluster: str
    pool: str
    profile: str  # Default, PrefixCache, Custom, or P/D for disaggregated serving
    failure_mode: str
    picker_replicas: int
    weight: int | None  # the Ready replicas its endpoint weighs; None before any reports its gateway
    priority: int | None
    monitors: tuple[str, ...]  # e.g. "2 PodMonitor", "PrometheusRule", "ServiceMonitor"


@dataclass(frozen=True)
class CacheCopyView:
    """A ModelCache's copy on one cluster: its phase, and the replicas there that wait for it (CacheNotReady)."""

    cache: str  # namespace/name
    cluster: str
    phase: str  # Pending, Hydrating, Ready, Failed
    message: str
    waiting: tuple[str, ...]  # namespace/name of each replica that waits for this copy


@dataclass(frozen=True)
class BatchRunView:
    """A ModelBatchRun, on the cluster it was placed on ("" while Pending): its phase and its requests."""

    cluster: str
    run: str  # namespace/name
    mode: str  # Dedicated or Service
    pool: str  # the worker's pool (Dedicated), "" otherwise
    schedule: str  # the cron schedule, "" for a one-shot run
    phase: str  # Pending, Scheduled, Running, Succeeded, Failed, Expired
    requests: str  # "completed/total (failed failed)" as the worker reported, "" before it did
    message: str  # the Scheduled condition's message


@dataclass(frozen=True)
class QuotaView:
    """One limit of a FleetQuota (a team's): what it allows, what its replicas hold, by class and priority."""

    quota: str
    namespaces: tuple[str, ...]
    limit: str  # the limit's className, or limits[<index>] for a device selector; "-" for a quota without limits
    allows: int | None  # None for a quota without limits
    in_use: int
    classes: tuple[str, ...]  # "nvidia-h100-8 16" per class of the pools it covers
    priorities: tuple[str, ...]  # "production 16", "batch 8 (8 not serving)"
    beyond: tuple[str, ...]  # replicas the quota finds beyond a limit (withdrawn or preempted)
    within: Condition  # WithinLimits


@dataclass(frozen=True)
class Message:
    """One function result, once, with the object it is about."""

    severity: str
    object: str
    text: str


@dataclass(frozen=True)
class FleetView:
    """Everything the preview shows about a settled fleet."""

    source: str
    objects: int
    passes: int
    classes: tuple[ClassView, ...]
    clusters: tuple[ClusterView, ...]
    deployments: tuple[DeploymentView, ...]
    services: tuple[ServiceView, ...]
    gateways: dict[str, str]
    control_plane_releases: tuple[ReleaseView, ...]
    messages: tuple[Message, ...]
    errors: dict[str, str] = field(default_factory=dict)  # object -> why its render failed
    pools: tuple[PoolRouteView, ...] = ()  # in-cluster routing: one per deployment per cluster
    caches: tuple[CacheCopyView, ...] = ()  # model caches: one per cache per cluster that keeps a copy
    batches: tuple[BatchRunView, ...] = ()  # batch runs, by cluster
    quotas: tuple[QuotaView, ...] = ()  # fleet quotas: one per limit of each FleetQuota
