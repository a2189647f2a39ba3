"""A workload scheduler: what it adds to the pods of one gang, and which of its objects tell capacity."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelplane.capacity.snapshot import Snapshot
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


def required_setting(settings: Mapping[str, Any], block: str, name: str, scheduler_type: str) -> str:
    """The setting ``spec.scheduler.<block>.<name>`` that ``scheduler_type`` needs.

    Raises:
        SchedulerSettingsError: it is not set; the message names the field.
    """
    value = str((settings.get(block) or {}).get(name) or "")
    if not value:
        msg = f"spec.scheduler.{block}.{name}: required when scheduler.type is {scheduler_type}"
        raise SchedulerSettingsError(msg)
    return value


WrapFunction = Callable[[Gang, Mapping[str, Any]], Wrapping]
"""A scheduler: the gang and the cluster's ``spec.scheduler`` (as written) in, the wrapping out."""


@dataclass(frozen=True)
class Watch:
    """One status object of a scheduler, observed on the workload cluster for its capacity figures.

    Attributes:
        name: Its composition key after ``modelplane.names.scheduler_key`` (``queue``, ``flavor-a``).
        manifest: The object on the cluster: its apiVersion, kind and metadata.name.
        layout: What is read of it (``modelplane.layout``).
        object_suffix: The Observe-only Object's name, after the cluster's (``kai-queue``).
        observed_for: The object that named this one ("" for none), e.g. a flavor's ClusterQueue:
            recorded on the Observe-only Object so that it can be kept for that object alone.
    """

    name: str
    manifest: Mapping[str, Any]
    layout: Any
    object_suffix: str
    observed_for: str = ""


@dataclass(frozen=True)
class Observation:
    """What a cluster observes of its scheduler.

    Attributes:
        watches: The status objects to observe, in a stable order.
        partial: The list may lack objects observed before (it was derived from an object read in
            part): those are kept, not removed.
        unobserved: Why the settings observe nothing ("" when they do): capacity is then the declared one.
        kept_prefix: Watches observed before whose name starts with this ("" for none) and that were
            observed for ``kept_for`` are kept even when not in ``watches``: objects named by an
            observed object that may have been read damaged, whose observers cost nothing to keep.
        kept_for: The ``Watch.observed_for`` of the watches ``kept_prefix`` keeps.
    """

    watches: tuple[Watch, ...] = ()
    partial: bool = False
    unobserved: str = ""
    kept_prefix: str = ""
    kept_for: str = ""


Seen = Callable[[Watch], tuple[Mapping[str, Any] | None, bool]]
"""The observed object of a watch, conformed to its layout (None when not observed), and whether it read whole."""
ObserveFunction = Callable[[Any, Seen], Observation]
"""A scheduler's watches: the cluster's ``spec.scheduler`` (its model) and what was observed before, in."""
SnapshotFunction = Callable[[Sequence[Mapping[str, Any]], Iterable[str]], Snapshot]
"""A scheduler's capacity figures: its observed status objects and the DRA device classes that count as GPUs, in."""


def observes_nothing(settings: Any, seen: Seen) -> Observation:  # noqa: ANN401, ARG001 - the table's signature
    """A scheduler without status objects to observe."""
    return Observation()


@dataclass(frozen=True)
class WorkloadScheduler:
    """Everything Modelplane knows of one workload scheduler: one row of ``modelplane.schedulers.SCHEDULERS``.

    Attributes:
        wrap: How a replica's gang is wrapped for it (compose-model-replica).
        observe: Which of its status objects a cluster observes (compose-inference-cluster).
        snapshot: How those objects read as capacity figures (None: capacity is the declared one).
        charts: The ServingStack components (``modelplane.charts.Component`` values) it installs.
        apis: The API versions (``group/version``) Modelplane uses of it, which say it is installed when a
            cluster runs it already (``servingStack.components.scheduler.mode: Existing``).
        controller: Its controller's Deployment (namespace, name), Available when it runs; None when its
            Deployments differ between releases and only ``apis`` are checked.
    """

    wrap: WrapFunction
    observe: ObserveFunction = observes_nothing
    snapshot: SnapshotFunction | None = None
    charts: tuple[str, ...] = ()
    apis: tuple[str, ...] = ()
    controller: tuple[str, str] | None = None
