"""The fleet scheduler: placements of a ModelDeployment's replicas on InferenceCluster pools."""

from modelplane.names import replica_name, replica_ordinal
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
from modelplane.scheduling.placement import Held, HoldReason, Origin, Placement, RolePlacement, State
from modelplane.scheduling.placer import Placer
from modelplane.scheduling.reconcile import Existing
from modelplane.scheduling.rejection import ClusterRejection, PoolRejection, RejectReason, Unplaced
from modelplane.scheduling.request import InvalidDeploymentError, Request, request_of
from modelplane.scheduling.result import Pending, Rollout, Schedule
from modelplane.scheduling.revision import serving_shape, shape_revision
from modelplane.scheduling.scheduler import schedule
from modelplane.scheduling.strategy import Strategy, strategy_of
from modelplane.scheduling.view import FleetView, PoolState, fleet_view

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
    "FleetView",
    "Held",
    "HoldReason",
    "InvalidDeploymentError",
    "Origin",
    "Pending",
    "Placement",
    "Placer",
    "PoolReason",
    "PoolRejection",
    "PoolState",
    "RejectReason",
    "Request",
    "RolePlacement",
    "Rollout",
    "Schedule",
    "SelectorError",
    "State",
    "Strategy",
    "Unplaced",
    "fleet_view",
    "match_cel",
    "replica_name",
    "replica_ordinal",
    "request_of",
    "schedule",
    "serving_shape",
    "shape_revision",
    "strategy_of",
]
