"""The devices of an InferenceClass and whether a role's node selector accepts them.

A role's ``nodeSelector.cel`` accepts a class when it matches at least one of
the class's ``claim: DRA`` device kinds. Each ``nodeSelector.devices[]`` entry
is met when one device kind of the class, DRA or Synthetic, matches its
``cel`` and a node has at least ``count`` of it. The topology fits when the
GPUs a worker needs on one node are at most the class's accelerator count
(its first DRA device). Each (expression, class, device kind) is evaluated at
most once per scheduling run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from modelplane.classes import review_class
from modelplane.pricing import NO_CLASS_PRICE, ClassPrice, class_price
from modelplane.problems import describe
from modelplane.topology import Footprint, Role
from modelplane_models.inference_class import Attributes, InferenceClass


class Claim(StrEnum):
    """How a replica gets a device kind."""

    DRA = "DRA"
    SYNTHETIC = "Synthetic"


@dataclass(frozen=True)
class DeviceVersion:
    """A semantic-version attribute value, e.g. ``9.0.0``."""

    text: str


AttributeValue = str | int | bool | DeviceVersion


@dataclass(frozen=True)
class ClassDevice:
    """One device kind of a class, as the CEL environment sees it (bare keys; the domain is the driver)."""

    name: str
    driver: str
    claim: Claim
    count: int
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, str | int]


@dataclass(frozen=True)
class ClassView:
    """What the scheduler needs of an InferenceClass.

    Attributes:
        name: The class's name.
        devices: Its device kinds, in spec order.
        accelerator_per_node: The count of its first DRA device, or None without one.
        problem: Why the class cannot be used (empty when it is valid).
        price: What one of its accelerators costs and draws (``spec.cost``, ``spec.powerWatts``).
    """

    name: str
    devices: tuple[ClassDevice, ...]
    accelerator_per_node: int | None
    problem: str
    price: ClassPrice = NO_CLASS_PRICE


class SelectorError(Exception):
    """A CEL expression that does not compile or fails to evaluate."""

    def __init__(self, expression: str, message: str) -> None:
        """Name the expression and what went wrong."""
        super().__init__(f"{expression!r}: {message}")
        self.expression = expression
        self.message = message


DeviceMatcher = Callable[[str, ClassDevice], bool]
"""Decides whether a CEL expression accepts a device; raises ``SelectorError`` for a bad expression."""


def _attribute(value: Attributes) -> AttributeValue | None:
    if value.string is not None:
        return value.string
    if value.bool_ is not None:
        return value.bool_
    if value.int_ is not None:
        return value.int_
    if value.version is not None:
        return DeviceVersion(value.version)
    return None


def class_view(klass: InferenceClass) -> ClassView | None:
    """Read a class once for scheduling; None when it has no name or spec."""
    if klass.metadata is None or not klass.metadata.name or klass.spec is None:
        return None
    review = review_class(klass.spec)
    devices = []
    for device in klass.spec.devices:
        attributes = {k: a for k, v in sorted((device.attributes or {}).items()) if (a := _attribute(v)) is not None}
        capacity = {k: c.value.root for k, c in sorted((device.capacity or {}).items())}
        claim = Claim(device.claim or Claim.DRA)
        devices.append(ClassDevice(device.name, device.driver, claim, device.count, attributes, capacity))
    return ClassView(
        name=klass.metadata.name,
        devices=tuple(devices),
        accelerator_per_node=review.accelerator.count_per_node if review.accelerator is not None else None,
        problem=describe(review.problems),
        price=class_price(
            klass.spec.cost.perGPUHour if klass.spec.cost is not None else None,
            klass.spec.cost.currency if klass.spec.cost is not None else None,
            klass.spec.powerWatts,
        ),
    )


@dataclass(frozen=True)
class DeviceRequest:
    """One ``nodeSelector.devices[]`` entry."""

    name: str
    cel: str
    count: int


@dataclass(frozen=True)
class RoleRequest:
    """What one role of the deployment asks of a pool.

    Attributes:
        role: The role.
        field: The path of its node selector, e.g. ``spec.prefill.nodeSelector``.
        cel: The accelerator's selector.
        devices: Extra device requirements.
        footprint: What one replica's role occupies.
    """

    role: Role
    field: str
    cel: str
    devices: tuple[DeviceRequest, ...]
    footprint: Footprint


class PoolReason(StrEnum):
    """Why a pool does not take a role of a replica."""

    CLASS_NOT_FOUND = "ClassNotFound"
    INVALID_CLASS = "InvalidClass"
    SELECTOR_MISMATCH = "SelectorMismatch"
    DEVICES_MISSING = "DevicesMissing"
    CEL_ERROR = "CELError"
    TOPOLOGY_EXCEEDS_NODE = "TopologyExceedsNode"
    TOO_FEW_NODES = "TooFewNodes"
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"


@dataclass(frozen=True)
class ClassFit:
    """Whether a class suits a role: ``misfit`` is None when it does, else why not, with a message."""

    misfit: PoolReason | None
    message: str = ""


class ClassJudge:
    """Judges classes for roles, evaluating every (expression, class, device kind) at most once."""

    def __init__(
        self,
        matcher: DeviceMatcher,
        classes: Mapping[str, ClassView],
        verdicts: dict[tuple[str, str, int], bool | SelectorError] | None = None,
    ) -> None:
        """Judge ``classes`` with ``matcher``; ``verdicts`` may be shared by judges of the same classes."""
        self._matcher = matcher
        self._classes = classes
        self._verdicts: dict[tuple[str, str, int], bool | SelectorError] = {} if verdicts is None else verdicts
        self._fits: dict[tuple[Role, str], ClassFit] = {}

    def fit(self, request: RoleRequest, class_name: str) -> ClassFit:
        """Whether the class named ``class_name`` suits ``request``."""
        key = (request.role, class_name)
        if key not in self._fits:
            self._fits[key] = self._judge(request, class_name)
        return self._fits[key]

    def _verdict(self, expression: str, klass: ClassView, index: int) -> bool | SelectorError:
        key = (expression, klass.name, index)
        if key not in self._verdicts:
            try:
                self._verdicts[key] = self._matcher(expression, klass.devices[index])
            except SelectorError as error:
                self._verdicts[key] = error
        return self._verdicts[key]

    def matches_any(self, expression: str, class_name: str) -> bool | SelectorError:
        """Whether ``expression`` accepts one of the class's DRA devices (a FleetQuota's ``deviceSelector``).

        False for a class that is not known; the first evaluation error when none matches and one fails.
        """
        klass = self._classes.get(class_name)
        if klass is None:
            return False
        verdicts = [self._verdict(expression, klass, i) for i, d in enumerate(klass.devices) if d.claim is Claim.DRA]
        if True in verdicts:
            return True
        return next((v for v in verdicts if isinstance(v, SelectorError)), False)

    def class_problem(self, class_name: str) -> tuple[PoolReason, str] | None:
        """Why the class named ``class_name`` cannot be used by any role (missing or invalid), or None."""
        klass = self._classes.get(class_name)
        if klass is None:
            return PoolReason.CLASS_NOT_FOUND, f"InferenceClass {class_name} not found"
        if klass.problem or klass.accelerator_per_node is None:
            return PoolReason.INVALID_CLASS, f"InferenceClass {class_name} is invalid: {klass.problem}"
        return None

    def _judge(self, request: RoleRequest, class_name: str) -> ClassFit:
        problem = self.class_problem(class_name)
        if problem is not None:
            return ClassFit(*problem)
        klass = self._classes[class_name]
        dra = [i for i, d in enumerate(klass.devices) if d.claim is Claim.DRA]
        verdicts = [self._verdict(request.cel, klass, i) for i in dra]
        if True not in verdicts:
            return _mismatch(
                PoolReason.SELECTOR_MISMATCH, f"{request.field}.cel", verdicts, f"matches no DRA device of {class_name}"
            )
        devices = self._devices_fit(request, klass)
        if devices is not None:
            return devices
        per_node = request.footprint.gpus_per_node
        if klass.accelerator_per_node is not None and per_node > klass.accelerator_per_node:
            return ClassFit(
                PoolReason.TOPOLOGY_EXCEEDS_NODE,
                f"a worker needs {per_node} GPUs per node; {class_name} has {klass.accelerator_per_node}",
            )
        return ClassFit(None)

    def _devices_fit(self, request: RoleRequest, klass: ClassView) -> ClassFit | None:
        """The first unmet ``nodeSelector.devices[]`` entry as a misfit, or None when all are met."""
        class_name = klass.name
        for index, device in enumerate(request.devices):
            found = [(i, self._verdict(device.cel, klass, i)) for i in range(len(klass.devices))]
            if any(v is True and klass.devices[i].count >= device.count for i, v in found):
                continue
            field = f"{request.field}.devices[{index}]"
            short = [klass.devices[i] for i, v in found if v is True]
            if short:
                counts = ", ".join(f"{d.name} has {d.count}" for d in short)
                return ClassFit(
                    PoolReason.DEVICES_MISSING, f"{field} ({device.name}) needs {device.count} per node; {counts}"
                )
            return _mismatch(
                PoolReason.DEVICES_MISSING,
                field,
                [v for _, v in found],
                f"({device.name}) matches no device of {class_name}",
            )
        return None


def _mismatch(misfit: PoolReason, field: str, verdicts: list[bool | SelectorError], message: str) -> ClassFit:
    # An evaluation error explains a mismatch better than "does not match".
    error = next((v for v in verdicts if isinstance(v, SelectorError)), None)
    if error is not None:
        return ClassFit(PoolReason.CEL_ERROR, f"{field}: {error.message} (in {error.expression!r})")
    return ClassFit(misfit, f"{field} {message}")
