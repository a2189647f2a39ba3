"""Condition types, reasons and a pure condition value that functions turn into status."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Type(StrEnum):
    """Condition types Modelplane sets on its XRs (Crossplane owns Ready and Synced)."""

    VALID = "Valid"
    SCHEDULED = "Scheduled"
    DEPLOYED = "Deployed"
    PROVISIONED = "Provisioned"
    STACK_READY = "StackReady"
    CAPACITY_KNOWN = "CapacityKnown"


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
