"""A component's mode, and which replicas need it: words the cluster publishes and the scheduler reads.

Kept apart from ``modelplane.stack.components`` (which reads the chart table) so that
capacity and scheduling read them without importing the charts.
"""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """Whether the stack installs a component, checks the cluster's own, or leaves it out."""

    MANAGED = "Managed"
    EXISTING = "Existing"
    DISABLED = "Disabled"


class NeededBy(StrEnum):
    """Which replicas cannot run on a cluster that lacks a component."""

    ALL = "All"
    MULTI_NODE = "MultiNode"  # replicas whose workers span nodes (LeaderWorkerSet)
    POOL_ROUTING = "PoolRouting"  # replicas of ModelDeployments routed through an InferencePool
    NONE = "None"
