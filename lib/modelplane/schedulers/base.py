"""What a workload scheduler adds to the pods of one gang, and the gang it is told about."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.topology import Role


@dataclass(frozen=True)
class Gang:
    """The pods of one role of a replica, which must be admitted together.

    Attributes:
        name: The role's workload name on the workload cluster (also the name of any object a
            scheduler adds for it, such as a KAI PodGroup).
        namespace: The namespace on the workload cluster.
        role: The role.
        pods: Every pod of the role: ``workers x nodes per worker``.
        labels: The labels Modelplane puts on every object of the replica.
    """

    name: str
    namespace: str
    role: Role
    pods: int
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Wrapping:
    """How a scheduler wraps a gang's workload.

    Attributes:
        scheduler_name: The pods' ``schedulerName`` (empty: the cluster's default scheduler).
        pod_labels: Labels added to every pod.
        pod_annotations: Annotations added to every pod.
        workload_labels: Labels added to the workload object itself (Deployment, LeaderWorkerSet,
            LLMInferenceService).
        objects: Extra remote manifests the scheduler needs (e.g. a PodGroup), in a stable order.
    """

    scheduler_name: str = ""
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    pod_annotations: Mapping[str, str] = field(default_factory=dict)
    workload_labels: Mapping[str, str] = field(default_factory=dict)
    objects: tuple[Mapping[str, Any], ...] = ()


class SchedulerSettingsError(ValueError):
    """The cluster's ``spec.scheduler`` lacks what its type needs (e.g. the KAI queue)."""


WrapFunction = Callable[[Gang, Mapping[str, Any]], Wrapping]
"""A scheduler: the gang and the cluster's ``spec.scheduler`` (as written) in, the wrapping out."""
