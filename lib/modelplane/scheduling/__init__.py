"""The fleet scheduler: placements of a ModelDeployment's replicas on InferenceCluster pools."""

from modelplane.scheduling.celmatch import match_cel
from modelplane.scheduling.decision import DecidedBy, Decision
from modelplane.scheduling.devices import (
    AttributeValue,
    Claim,
    ClassDevice,
    DeviceMatcher,
    DeviceVersion,
    PoolReason,
    SelectorError,
)
from modelplane.scheduling.names import replica_name, replica_ordinal
from modelplane.scheduling.result import (
    ClusterRejection,
    Held,
    HoldReason,
    Origin,
    Pending,
    Placement,
    PoolRejection,
    Reason,
    RolePlacement,
    Rollout,
    Schedule,
    State,
    Unplaced,
)
from modelplane.scheduling.revision import serving_shape, shape_revision
from modelplane.scheduling.scheduler import Existing, InvalidDeploymentError, schedule
from modelplane.scheduling.strategy import Strategy, strategy_of

__all__ = [
    "AttributeValue",
    "Claim",
    "ClassDevice",
    "ClusterRejection",
    "DecidedBy",
    "Decision",
    "DeviceMatcher",
    "DeviceVersion",
    "Existing",
    "Held",
    "HoldReason",
    "InvalidDeploymentError",
    "Origin",
    "Pending",
    "Placement",
    "PoolReason",
    "PoolRejection",
    "Reason",
    "RolePlacement",
    "Rollout",
    "Schedule",
    "SelectorError",
    "State",
    "Strategy",
    "Unplaced",
    "match_cel",
    "replica_name",
    "replica_ordinal",
    "schedule",
    "serving_shape",
    "shape_revision",
    "strategy_of",
]
