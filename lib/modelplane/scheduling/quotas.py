"""FleetQuotas as the scheduler reads them: whose namespaces, which limits, what their status counts.

A ``Quota`` is read once from a FleetQuota (its spec and the figures its function publishes in
``status.limits[]``); ``applying`` picks those that select a namespace (as the quota's function
found, in ``status.namespaces``: a deployment reads no Namespace);
``covers`` says whether a limit covers the pools of a class (by name, or by a DRA CEL selector
evaluated against the class's DRA devices, as a ModelDeployment's node selector is). The
function that counts a quota's use (``modelplane.quota``) and the gate that keeps placements
within it (``modelplane.scheduling.gate``) both judge coverage here, so they never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from modelplane.scheduling.devices import ClassJudge, SelectorError
from modelplane.scheduling.labels import LabelSelector, label_selector
from modelplane_models.fleet_quota import FleetQuota
from modelplane_models.fleet_quota import Limit1 as StatusLimit

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label Kubernetes gives every namespace, its name: a namespace not read is known by it alone."""


class Preemption(StrEnum):
    """``spec.preemption``: whether serving replicas of a lower priority give way under a quota."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


@dataclass(frozen=True)
class Limit:
    """One of ``spec.limits[]``.

    Attributes:
        index: Its index in ``spec.limits``.
        class_name: The InferenceClass it covers ("" for a device selector).
        device_selector: The DRA CEL selector of the classes it covers ("" for a class name).
        accelerators: The most accelerators the covered pools may hold.
    """

    index: int
    class_name: str
    device_selector: str
    accelerators: int

    @property
    def name(self) -> str:
        """How status and messages name it: its class, or ``limits[<index>]``."""
        return self.class_name or f"limits[{self.index}]"

    @property
    def what(self) -> str:
        """What it counts, for a message: ``nvidia-h100-8 accelerators``."""
        if self.class_name:
            return f"{self.class_name} accelerators"
        return f"accelerators matching limits[{self.index}].deviceSelector"


@dataclass(frozen=True)
class PriorityUse:
    """What one priority's replicas hold under a limit, as published."""

    value: int
    in_use: int
    not_serving: int


@dataclass(frozen=True)
class Published:
    """One limit's use as the quota's function last counted it (``status.limits[]``).

    Attributes:
        in_use: Accelerators held.
        deployments: Per ModelDeployment ("namespace/name"), what its replicas hold.
        priorities: Per priority value, what its replicas hold and how much of it does not serve yet.
    """

    in_use: int = 0
    deployments: Mapping[str, int] = field(default_factory=dict)
    priorities: tuple[PriorityUse, ...] = ()

    def preemptible(self, priority: int, preemption: Preemption) -> int:
        """What replicas of a priority below ``priority`` hold that a replica of ``priority`` may take.

        Only what does not serve yet, unless the quota's preemption is LowerPriority.
        """
        lower = (p for p in self.priorities if p.value < priority)
        if preemption is Preemption.LOWER_PRIORITY:
            return sum(p.in_use for p in lower)
        return sum(p.not_serving for p in lower)


@dataclass(frozen=True)
class Quota:
    """One FleetQuota.

    Attributes:
        name: Its name.
        selector: ``spec.namespaceSelector``.
        limits: ``spec.limits``.
        allowed: ``spec.priorityClasses`` (None: unset, every class is allowed).
        preemption: ``spec.preemption``.
        published: Per limit index, its use as last published (a limit not published yet is absent).
        exceeded: Replicas ("namespace/name") not serving that the quota found beyond a limit.
        preempted: Serving replicas ("namespace/name") to retire for a higher priority (LowerPriority).
        namespaces: The namespaces its function found it selects (``status.namespaces``); None before it
            published any.
    """

    name: str
    selector: LabelSelector
    limits: tuple[Limit, ...] = ()
    allowed: frozenset[str] | None = None
    preemption: Preemption = Preemption.NEVER
    published: Mapping[int, Published] = field(default_factory=dict)
    exceeded: frozenset[str] = frozenset()
    preempted: frozenset[str] = frozenset()
    namespaces: frozenset[str] | None = None

    def applies_to(self, namespace: str) -> bool:
        """Whether the quota selects ``namespace``, as its function last found (the deployment reads no Namespace).

        A selector of every namespace selects it; a quota that has published no namespaces yet selects it
        when its name label alone matches.
        """
        if not self.selector.requirements:
            return True
        if self.namespaces is not None:
            return namespace in self.namespaces
        return self.selector.matches(namespace_labels(namespace, None))


def quota_of(quota: FleetQuota) -> Quota | None:
    """Read a FleetQuota; None without a name or spec."""
    if quota.metadata is None or not quota.metadata.name or quota.spec is None:
        return None
    spec = quota.spec
    limits = tuple(
        Limit(i, limit.className or "", limit.deviceSelector or "", limit.accelerators)
        for i, limit in enumerate(spec.limits or [])
    )
    status = quota.status
    published: dict[int, Published] = {}
    for i, (limit, entry) in enumerate(zip(limits, (status.limits or []) if status else [], strict=False)):
        # A status written for other limits (the spec changed since) says nothing about these.
        if entry.name == limit.name:
            published[i] = _published(entry)
    return Quota(
        name=quota.metadata.name,
        selector=label_selector(spec.namespaceSelector),
        limits=limits,
        allowed=frozenset(p.root for p in spec.priorityClasses) if spec.priorityClasses is not None else None,
        preemption=Preemption(spec.preemption or Preemption.NEVER),
        published=published,
        exceeded=frozenset((status.exceeded or []) if status else []),
        preempted=frozenset((status.preempted or []) if status else []),
        namespaces=frozenset(status.namespaces) if status is not None and status.namespaces is not None else None,
    )


def _published(entry: StatusLimit) -> Published:
    deployments: dict[str, int] = {}
    for d in entry.deployments or []:
        if d.name:
            deployments[d.name] = deployments.get(d.name, 0) + max(0, d.inUse or 0)
    priorities = tuple(
        PriorityUse(p.value or 0, max(0, p.inUse or 0), max(0, p.notServing or 0)) for p in entry.priorities or []
    )
    return Published(max(0, entry.inUse or 0), deployments, priorities)


def namespace_labels(namespace: str, labels: Mapping[str, str] | None) -> dict[str, str]:
    """A namespace's labels, with the name label Kubernetes always sets (also for a namespace not read)."""
    return {**(labels or {}), NAMESPACE_NAME_LABEL: namespace}


def applying(quotas: Iterable[Quota], namespace: str) -> tuple[Quota, ...]:
    """The quotas that select ``namespace`` (``Quota.applies_to``), by name."""
    return tuple(sorted((q for q in quotas if q.applies_to(namespace)), key=lambda q: q.name))


def covers(limit: Limit, class_name: str, judge: ClassJudge) -> bool:
    """Whether ``limit`` covers the pools of the class ``class_name``.

    A device selector that fails to evaluate on the class covers it: a quota errs on the side of its limit.
    """
    if limit.class_name:
        return limit.class_name == class_name
    verdict = judge.matches_any(limit.device_selector, class_name)
    return verdict is True or isinstance(verdict, SelectorError)


def selector_errors(quota: Quota, classes: Iterable[str], judge: ClassJudge) -> list[str]:
    """Each device selector of ``quota`` that fails to evaluate on one of ``classes``, said once per limit."""
    out = []
    for limit in quota.limits:
        if not limit.device_selector:
            continue
        for class_name in sorted(classes):
            verdict = judge.matches_any(limit.device_selector, class_name)
            if isinstance(verdict, SelectorError):
                out.append(f"spec.limits[{limit.index}].deviceSelector: {verdict.message} (on {class_name})")
                break
    return out


@dataclass(frozen=True)
class Quotas:
    """What a deployment's placements answer to: the FleetQuotas of its namespace, and its priority's value.

    Attributes:
        applying: The FleetQuotas whose namespaceSelector selects the deployment's namespace.
        priority: The value of its FleetPriorityClass (0 for none).
    """

    applying: tuple[Quota, ...] = ()
    priority: int = 0

    @property
    def preemptible(self) -> bool:
        """Whether the namespace consents to give way for physical capacity: every quota of it says LowerPriority.

        The victim's team consents, not the newcomer's: a namespace no quota selects never gives way,
        and one quota that says ``Never`` (the default) keeps what serves there.
        """
        return bool(self.applying) and all(q.preemption is Preemption.LOWER_PRIORITY for q in self.applying)
