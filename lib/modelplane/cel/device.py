"""The device a selector is evaluated against, shaped like a DRA ResourceSlice device."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from modelplane.cel import k8s
from modelplane.cel.interpreter import DomainMap
from modelplane.cel.values import INT64_MAX, INT64_MIN, EvalError, Value


class SemVer(str):
    """A version attribute (``{version: "9.0.0"}``), told apart from a string attribute by its type."""

    __slots__ = ()


@dataclass(frozen=True)
class Device:
    """One kind of device: its driver, typed attributes and capacities.

    Keys are bare names (``architecture``) in the driver's domain, or fully qualified
    (``dra.example.com/zone``) as a ResourceSlice allows; CEL reads them as
    ``device.attributes["<domain>"].<name>`` and ``device.capacity["<domain>"].<name>``.

    Attributes:
        driver: The DRA driver, e.g. ``gpu.nvidia.com``; the domain of bare names.
        attributes: Name to ``str``, ``int``, ``bool`` or :class:`SemVer`.
        capacity: Name to a Kubernetes quantity, e.g. ``"80Gi"`` or ``8``.

    """

    driver: str
    attributes: Mapping[str, str | int | bool | SemVer] = field(default_factory=dict)
    capacity: Mapping[str, str | int] = field(default_factory=dict)

    @cached_property
    def cel_value(self) -> dict[str, Value]:
        """The ``device`` variable, built once per device (raises :class:`EvalError` as Kubernetes would)."""
        attributes: dict[str, dict[Value, Value]] = {}
        for name, value in sorted(self.attributes.items()):
            domain, ident = _split(name, self.driver)
            attributes.setdefault(domain, {})[ident] = _attribute(name, value)
        capacity: dict[str, dict[Value, Value]] = {}
        for name, amount in sorted(self.capacity.items()):
            domain, ident = _split(name, self.driver)
            capacity.setdefault(domain, {})[ident] = _quantity(name, amount)
        return {"driver": self.driver, "attributes": DomainMap(attributes), "capacity": DomainMap(capacity)}


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute(name: str, value: object) -> Value:
    if isinstance(value, SemVer):
        try:
            return k8s.parse_semver(str(value))
        except k8s.SemverError as e:
            raise EvalError(f"attribute {name}: parse semantic version: {e}") from None
    if isinstance(value, bool | str):
        return value if isinstance(value, bool) else str(value)
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise EvalError(f"attribute {name}: integer out of range")
        return int(value)
    raise EvalError(f"attribute {name}: unsupported attribute value {value!r}")


def _quantity(name: str, amount: object) -> Value:
    if isinstance(amount, bool) or not isinstance(amount, int | str):
        raise EvalError(f"capacity {name}: unsupported quantity {amount!r}")
    if isinstance(amount, int):
        return k8s.quantity_from_int(amount)
    try:
        return k8s.parse_quantity(amount)
    except k8s.QuantityError as e:
        raise EvalError(f"capacity {name}: {e}") from None
