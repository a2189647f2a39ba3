"""CEL runtime values and the operations every library shares (equality, ordering, sizes).

Most CEL values are plain Python values: ``bool``, ``int`` (int64), :class:`Uint`, ``float``
(double), ``str``, ``bytes``, ``None`` (null), ``list`` and ``dict``. The Kubernetes types
(:class:`Quantity`, :class:`Semver`), optionals and type values have classes here. Errors are
raised as :class:`EvalError` and absorbed where CEL says so (``&&``, ``||``, comprehensions).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeAlias

Value: TypeAlias = object

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


class EvalError(Exception):
    """A CEL runtime error, e.g. ``no such key: architecture``."""


class Uint(int):
    """A CEL ``uint``; a subclass so ``1u`` and ``1`` stay apart where CEL tells them apart."""

    __slots__ = ()

    def __repr__(self) -> str:
        """Render as a CEL literal."""
        return f"{int(self)}u"


@dataclass(frozen=True, slots=True)
class BoolKey:
    """A ``bool`` map key: stored wrapped so that ``true`` and ``1`` are different keys."""

    value: bool


def no_such_overload(function: str = "") -> EvalError:
    """The error CEL raises when no implementation fits the arguments' runtime types."""
    return EvalError(f"no such overload: {function}" if function else "no such overload")


@dataclass(frozen=True, slots=True)
class TypeValue:
    """A CEL type used as a value: ``type(1) == int``."""

    name: str

    def __str__(self) -> str:
        """Render as the type's name."""
        return self.name


@dataclass(frozen=True, slots=True)
class Optional:
    """An ``optional_type`` value: ``optional.of(x)`` or ``optional.none()``."""

    value: Value = None
    present: bool = False


NONE = Optional()


@dataclass(frozen=True, slots=True)
class Quantity:
    """A Kubernetes resource quantity (``kubernetes.Quantity``): ``unscaled * 10**scale``.

    ``dec`` marks a quantity Kubernetes holds as an ``inf.Dec`` rather than an ``int64Amount``
    (``isInteger`` is then false). ``boxed`` marks one made by ``add``/``sub``, which Kubernetes
    returns by pointer: its equality refuses a boxed right-hand side with "no such overload",
    a quirk kept so that answers match the real environment.
    """

    unscaled: int
    scale: int
    dec: bool = False
    boxed: bool = False

    def exact(self) -> Fraction:
        """The exact value."""
        if self.scale >= 0:
            return Fraction(self.unscaled * 10**self.scale)
        return Fraction(self.unscaled, 10**-self.scale)


@dataclass(frozen=True, slots=True)
class Semver:
    """A semantic version (``kubernetes.Semver``); build metadata does not take part in ordering."""

    major: int
    minor: int
    patch: int
    pre: tuple[str | int, ...] = ()
    build: tuple[str, ...] = ()

    def compare(self, other: Semver) -> int:  # noqa: PLR0911 (semver 2.0.0's precedence rules, in order)
        """Return -1, 0 or 1 as semver 2.0.0 orders the two versions."""
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            if isinstance(a, int) and isinstance(b, int):
                return -1 if a < b else 1
            if isinstance(a, int):
                return -1
            if isinstance(b, int):
                return 1
            return -1 if a < b else 1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))


def map_key(key: Value) -> Value:
    """Return how ``key`` is stored in a CEL map (see :class:`BoolKey`)."""
    return BoolKey(key) if type(key) is bool else key


def map_keys(m: dict[Value, Value]) -> Iterator[Value]:
    """Iterate over a CEL map's keys as CEL values."""
    for key in m:
        yield key.value if type(key) is BoolKey else key


_MISSING = object()


def map_find(m: dict[Value, Value], key: Value) -> tuple[bool, Value]:
    """Look ``key`` up with CEL's heterogeneous numeric equality (``1``, ``1u`` and ``1.0`` agree)."""
    if type(key) is str:
        found = m.get(key, _MISSING)
    elif type(key) is float:
        if not key.is_integer():
            return False, None
        found = m.get(int(key), _MISSING)
    elif isinstance(key, (bool, int)):
        found = m.get(map_key(key), _MISSING)
    else:
        return False, None
    if found is _MISSING:
        return False, None
    return True, found


_TYPE_NAMES: dict[type, str] = {
    type(None): "null_type",
    bool: "bool",
    Uint: "uint",
    int: "int",
    float: "double",
    str: "string",
    bytes: "bytes",
    list: "list",
    dict: "map",
    Quantity: "kubernetes.Quantity",
    Semver: "kubernetes.Semver",
    Optional: "optional_type",
    TypeValue: "type",
}


def type_name(v: Value) -> str:
    """The CEL name of a value's type, as error messages print it."""
    name = _TYPE_NAMES.get(type(v))
    if name is None:
        return "map" if isinstance(v, dict) else type(v).__name__
    return name


def is_number(v: Value) -> bool:
    """Report whether ``v`` is an int, uint or double (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def equal(a: Value, b: Value) -> bool:  # noqa: PLR0911 (one case per CEL type)
    """CEL ``==``: heterogeneous (``1 == 1.0``), raising where cel-go's types raise."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (str, bytes)):
        return type(b) is type(a) and a == b
    if isinstance(a, bool):
        return isinstance(b, bool) and a == b
    if isinstance(a, (int, float)):
        return _numbers_equal(a, b)
    if isinstance(a, list):
        return _lists_equal(a, b)
    if isinstance(a, dict):
        return _maps_equal(a, b)
    return _object_equal(a, b)


def _numbers_equal(a: float, b: Value) -> bool:
    if not isinstance(b, (int, float)) or isinstance(b, bool):
        return False
    if math.isnan(a) or math.isnan(b):
        return False
    return a == b


def _lists_equal(a: list[Value], b: Value) -> bool:
    if not isinstance(b, list) or len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        try:
            if not equal(x, y):
                return False
        except EvalError:
            continue  # cel-go stops only on a definite False
    return True


def _maps_equal(a: dict[Value, Value], b: Value) -> bool:
    if not isinstance(b, dict) or len(a) != len(b):
        return False
    for key, value in a.items():
        found, other = map_find(b, key.value if isinstance(key, BoolKey) else key)
        if not found:
            return False
        try:
            if not equal(value, other):
                return False
        except EvalError:
            continue
    return True


def _object_equal(a: Value, b: Value) -> bool:  # noqa: PLR0911 (one case per CEL type)
    match a:
        case Quantity():
            if type(b) is not Quantity or b.boxed:
                raise no_such_overload()
            scale = min(a.scale, b.scale)
            left: int = a.unscaled * 10 ** (a.scale - scale)
            right: int = b.unscaled * 10 ** (b.scale - scale)
            return left == right
        case Semver():
            if type(b) is not Semver:
                raise no_such_overload()
            return a.compare(b) == 0
        case Optional():
            if type(b) is not Optional:
                return False
            if not a.present or not b.present:
                return a.present == b.present
            return equal(a.value, b.value)
        case TypeValue():
            return type(b) is TypeValue and a.name == b.name
        case _:
            return a == b


def compare(a: Value, b: Value) -> int:
    """CEL ordering for ``<``, ``<=``, ``>``, ``>=``: -1, 0 or 1, raising when undefined."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and is_number(a) and is_number(b):
        if math.isnan(a) or math.isnan(b):
            msg = "NaN values cannot be ordered"
            raise EvalError(msg)
        return (a > b) - (a < b)
    if isinstance(a, str) and isinstance(b, str):
        return (a > b) - (a < b)
    if isinstance(a, bytes) and isinstance(b, bytes):
        return (a > b) - (a < b)
    if isinstance(a, bool) and isinstance(b, bool):
        return (a > b) - (a < b)
    raise no_such_overload()


def size(v: Value) -> int:
    """The size CEL's cost model uses: code points, bytes, elements or entries; 1 otherwise."""
    if isinstance(v, (str, bytes, list, dict)):
        return len(v)
    if isinstance(v, Optional) and v.present:
        return size(v.value)
    return 1
