"""Condition types, reasons and a pure condition value that functions turn into status."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Type(StrEnum):
    """Condition types Modelplane sets on its XRs (Crossplane owns Ready and Synced)."""

    VALID = "Valid"
    SCHEDULED = "Scheduled"
    DEPLOYED = "Deployed"
    APPLY_FAILED = "ApplyFailed"
    PROVISIONED = "Provisioned"
    STACK_READY = "StackReady"
    CAPACITY_KNOWN = "CapacityKnown"
    # Routing: the gateway has an address; a service's route sends traffic to its endpoints.
    PROGRAMMED = "Programmed"
    ROUTED = "Routed"
    SERVING = "Serving"
    # A ServingStack: its Helm releases and its Gateway.
    INSTALLED = "Installed"
    # A ModelDeployment's rollout, and whether a cluster hosting its replicas is lost.
    PROGRESSING = "Progressing"
    FAILOVER = "Failover"
    # Whether a ModelDeployment's spec.placement.strategy applies (set only for CostOptimized and CarbonAware).
    PLACEMENT_STRATEGY = "PlacementStrategy"
    # Whether a ModelDeployment's spec.modelCacheRef is found and its copy Ready for every replica (set with it only).
    CACHE_READY = "CacheReady"
    # An InferenceCluster's drain (spec.drain).
    DRAINED = "Drained"
    # An InferenceCluster's ModelReplicas placed concurrently beyond its capacity.
    OVERCOMMITTED = "Overcommitted"
    # An InferenceCluster's pools taken out of spec.nodePools: each kept until no ModelReplica runs on it.
    POOLS_REMOVED = "PoolsRemoved"
    # Whether an InferenceGateway authenticates its callers (spec.auth) with what it names.
    AUTH_READY = "AuthReady"
    # Whether a ModelEndpoint's spec.credentials Secret exists, so the gateway can inject it (set with it only).
    CREDENTIALS_READY = "CredentialsReady"
    # Whether a ModelService's spec.limits are enforced; whether an InferenceGateway's rate-limit counter is set up.
    LIMITED = "Limited"
    RATE_LIMIT_READY = "RateLimitReady"
    # Whether a workload cluster's gateway serves TLS the control plane verifies (ServingStack, InferenceCluster).
    GATEWAY_TLS = "GatewayTLS"
    # Whether the components a workload cluster runs itself (mode Existing) are there (ServingStack, InferenceCluster).
    COMPONENTS_READY = "ComponentsReady"
    # A FleetQuota: whether what its namespaces' ModelReplicas hold is within its limits.
    WITHIN_LIMITS = "WithinLimits"


class Reason(StrEnum):
    """Machine-readable reasons, shared so every kind says the same thing the same way."""

    VALID = "Valid"
    INVALID_SPEC = "InvalidSpec"
    # Scheduling a ModelDeployment (the scheduler's own reasons share these values).
    SCHEDULED = "Scheduled"
    WAITING_FOR_FLEET = "WaitingForFleet"
    NO_MATCHING_CLUSTERS = "NoMatchingClusters"
    NO_MATCHING_POOLS = "NoMatchingPools"
    CEL_ERROR = "CELError"
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"
    # A FleetQuota of the namespace has no room; spec.priority names no FleetPriorityClass, or one a quota forbids.
    QUOTA_EXCEEDED = "QuotaExceeded"
    PRIORITY_CLASS_NOT_FOUND = "PriorityClassNotFound"
    PRIORITY_NOT_ALLOWED = "PriorityNotAllowed"
    # A FleetQuota's use (WithinLimits): within every limit, or serving replicas beyond a lowered one.
    WITHIN_LIMITS = "WithinLimits"
    OVER_LIMIT = "OverLimit"
    # spec.replicas is 0 (by hand or by an autoscaler): nothing to place, nothing serves.
    SCALED_TO_ZERO = "ScaledToZero"
    # A ModelDeployment's existing replica kept exactly as it runs (the scheduler's HoldReason values):
    # an input it depends on is gone or unreadable, or the changed spec cannot run where it runs.
    CLUSTER_UNREADABLE = "ClusterUnreadable"
    CLUSTER_DELETING = "ClusterDeleting"
    INVALID_CLASS = "InvalidClass"
    SELECTOR_MISMATCH = "SelectorMismatch"
    DEVICES_MISSING = "DevicesMissing"
    TOPOLOGY_EXCEEDS_NODE = "TopologyExceedsNode"
    TOO_FEW_NODES = "TooFewNodes"
    REPLICA_UNREADABLE = "ReplicaUnreadable"
    STALE_PLACEMENT = "StalePlacement"
    CLUSTER_DRAINING = "ClusterDraining"
    POOL_REMOVING = "PoolRemoving"
    PREEMPTED = "Preempted"
    CLUSTER_LOST = "ClusterLost"
    OUTDATED = "Outdated"
    # A ModelDeployment's rollout (Progressing) and failover (Failover).
    ROLLOUT_IN_PROGRESS = "RolloutInProgress"
    ROLLOUT_COMPLETE = "RolloutComplete"
    ROLLOUT_STALLED = "RolloutStalled"
    ROLLOUT_PAUSED = "RolloutPaused"
    CLUSTERS_READY = "ClustersReady"
    # A ModelDeployment's placement strategy (PlacementStrategy; the scheduler's StrategyReason values).
    COST_OPTIMIZED = "CostOptimized"
    CARBON_AWARE = "CarbonAware"
    NO_COST_DATA = "NoCostData"
    MIXED_CURRENCIES = "MixedCurrencies"
    NO_CARBON_DATA = "NoCarbonData"
    # An InferenceCluster's drain (Drained).
    DRAINED = "Drained"
    DRAINING = "Draining"
    DRAIN_BLOCKED = "DrainBlocked"
    NOT_DRAINING = "NotDraining"
    # An InferenceCluster's pools taken out of spec.nodePools (PoolsRemoved).
    POOLS_REMOVED = "PoolsRemoved"
    POOL_IN_USE = "PoolInUse"
    POOL_REMOVAL_BLOCKED = "PoolRemovalBlocked"
    # An InferenceCluster's ModelReplicas against its capacity (Overcommitted).
    WITHIN_CAPACITY = "WithinCapacity"
    OVERCOMMITTED = "Overcommitted"
    # Routing (InferenceGateway, ModelEndpoint, ModelService).
    PROGRAMMED = "Programmed"
    WAITING_FOR_ADDRESS = "WaitingForAddress"
    INVALID_URL = "InvalidURL"
    ROUTED = "Routed"
    NO_ENDPOINTS = "NoEndpoints"
    WAITING_FOR_GATEWAY = "WaitingForGateway"
    GATEWAY_NOT_FOUND = "GatewayNotFound"
    UNSUPPORTED_REWRITE = "UnsupportedRewrite"
    # A ModelService with more priority tiers than its gateway can fail over between.
    UNSUPPORTED_TIERS = "UnsupportedTiers"
    # An InferenceGateway's caller auth (AuthReady): required and configured, a named Secret missing,
    # disabled on purpose (mode None), or not set at all (a gateway created before spec.auth).
    AUTH_REQUIRED = "AuthRequired"
    # Also a ModelCache's copy whose source Secret (or a key) is missing on a workload cluster.
    SECRET_NOT_FOUND = "SecretNotFound"  # noqa: S105 - a reason, not a secret
    AUTH_DISABLED = "AuthDisabled"
    AUTH_NOT_CONFIGURED = "AuthNotConfigured"
    # A ModelEndpoint's spec.credentials Secret is there: the gateway injects it upstream.
    CREDENTIALS_INJECTED = "CredentialsInjected"
    # A ModelService's limits (Limited): enforced, refused (a field the gateway cannot serve), none set;
    # an InferenceGateway's counter (RateLimitReady): each Envoy replica its own, or Redis.
    LIMITED = "Limited"
    LIMITS_REFUSED = "LimitsRefused"
    LOCAL_COUNTERS = "LocalCounters"
    REDIS_COUNTERS = "RedisCounters"
    # A workload gateway's TLS (GatewayTLS); a ModelEndpoint's upstream CA (Valid).
    TLS_READY = "TLSReady"
    TLS_PENDING = "TLSPending"
    INSECURE = "Insecure"
    INSECURE_LISTENER_KEPT = "InsecureListenerKept"
    # A serving stack's Existing components (ComponentsReady): all found, one missing, not checked yet.
    COMPONENTS_READY = "ComponentsReady"
    COMPONENT_MISSING = "ComponentMissing"
    CHECKING_COMPONENTS = "CheckingComponents"
    CA_NOT_FOUND = "CANotFound"
    # A ModelReplica's remote workload (Deployed, Serving); remote reasons such as
    # ImagePullBackOff or Unschedulable are reported as the remote object says them.
    WAITING_FOR_CLUSTER = "WaitingForCluster"
    # A replica waiting for its ModelCache's copy on its cluster (policy Required); a deployment's
    # CacheReady condition: one of its replicas waits, or its ModelCache is not found.
    CACHE_NOT_READY = "CacheNotReady"
    CACHE_NOT_FOUND = "CacheNotFound"
    CACHE_READY = "CacheReady"
    # A ModelCache's spec.size exceeds the maxSize of its storage class on a cluster (spec.storageClasses).
    SIZE_EXCEEDS_STORAGE = "SizeExceedsStorage"
    CLUSTER_NOT_FOUND = "ClusterNotFound"
    CLUSTER_NOT_READY = "ClusterNotReady"
    CLASS_NOT_FOUND = "ClassNotFound"
    POOL_NOT_FOUND = "PoolNotFound"
    UNSUPPORTED = "Unsupported"
    DEPLOYING = "Deploying"
    DEPLOYED = "Deployed"
    # A Service-mode ModelBatchRun's ModelService: not found, or no Ready endpoint on a cluster to run the client on.
    SERVICE_NOT_FOUND = "ServiceNotFound"
    NO_READY_ENDPOINTS = "NoReadyEndpoints"
    APPLY_FAILED = "ApplyFailed"
    STARTING = "Starting"
    # A pod held by a scheduling gate (Kueue's admission gate): queued, not failing.
    WAITING_FOR_ADMISSION = "WaitingForAdmission"
    AVAILABLE = "Available"
    # The platform side (InferenceCluster, ServingStack).
    WAITING_FOR_INPUTS = "WaitingForInputs"
    PROVISIONED = "Provisioned"
    PROVISIONING = "Provisioning"
    NO_PROVISIONING_BLOCK = "NoProvisioningBlock"
    KUBECONFIG_NOT_FOUND = "KubeconfigNotFound"
    INSTALLING = "Installing"
    INSTALLED = "Installed"
    WAITING_FOR_DEPENDENCIES = "WaitingForDependencies"
    OBSERVED = "Observed"
    DECLARED = "Declared"
    SCHEDULER_STATUS_UNAVAILABLE = "SchedulerStatusUnavailable"


class Status(StrEnum):
    """A condition's status."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class Condition:
    """A condition to report on an XR."""

    type: Type
    status: Status
    reason: Reason
    message: str = ""
