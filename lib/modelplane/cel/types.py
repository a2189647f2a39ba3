"""CEL's static types and the assignability rules of cel-go's checker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Type:
    """A CEL type: ``kind`` says which family, ``name`` the type (or type parameter), ``params`` its arguments."""

    kind: str
    name: str
    params: tuple[Type, ...] = ()

    def __str__(self) -> str:
        """Render as cel-go's ``FormatCELType``: ``list(int)``, ``map(string, dyn)``..."""
        if self.kind in ("list", "map", "opaque", "type") and self.params:
            return f"{self.name}({', '.join(str(p) for p in self.params)})"
        return self.name


DYN: Final = Type("dyn", "dyn")
ANY: Final = Type("any", "google.protobuf.Any")
ERROR: Final = Type("error", "*error*")
NULL: Final = Type("null", "null_type")
BOOL: Final = Type("bool", "bool")
INT: Final = Type("int", "int")
UINT: Final = Type("uint", "uint")
DOUBLE: Final = Type("double", "double")
STRING: Final = Type("string", "string")
BYTES: Final = Type("bytes", "bytes")
TIMESTAMP: Final = Type("timestamp", "google.protobuf.Timestamp")
DURATION: Final = Type("duration", "google.protobuf.Duration")
TYPE: Final = Type("type", "type")
QUANTITY: Final = Type("struct", "kubernetes.Quantity")
SEMVER: Final = Type("struct", "kubernetes.Semver")
URL: Final = Type("struct", "kubernetes.URL")
NAMED_FORMAT: Final = Type("struct", "kubernetes.NamedFormat")
IP: Final = Type("opaque", "net.IP")
CIDR: Final = Type("opaque", "net.CIDR")
DEVICE: Final = Type("struct", "kubernetes.DRADevice")

_PRIMITIVE_KINDS: Final = frozenset(
    {"bool", "bytes", "double", "int", "string", "uint", "any", "duration", "timestamp"}
)


def list_of(elem: Type) -> Type:
    """``list(elem)``."""
    return Type("list", "list", (elem,))


def map_of(key: Type, value: Type) -> Type:
    """``map(key, value)``."""
    return Type("map", "map", (key, value))


def type_of(t: Type) -> Type:
    """``type(t)``, the type of a type name used as a value."""
    return Type("type", "type", (t,))


def optional_of(t: Type) -> Type:
    """``optional_type(t)``."""
    return Type("opaque", "optional_type", (t,))


def param(name: str) -> Type:
    """A type parameter of an overload, such as ``A`` in ``size(list(A))``."""
    return Type("param", name)


def is_dyn(t: Type) -> bool:
    """``dyn`` or ``google.protobuf.Any``: the checker lets both stand for anything."""
    return t.kind in ("dyn", "any")


def is_dyn_or_error(t: Type) -> bool:
    """``dyn``, ``any`` or the error type."""
    return t.kind in ("dyn", "any", "error")


def is_optional(t: Type) -> bool:
    """Report whether ``t`` is an ``optional_type``."""
    return t.kind == "opaque" and t.name == "optional_type"


def unwrap_optional(t: Type) -> tuple[Type, bool]:
    """``optional_type(x)`` to ``(x, True)``; any other type to ``(t, False)``."""
    if is_optional(t):
        return t.params[0], True
    return t, False


Mapping = dict[str, Type]


def _exact(t1: Type, t2: Type) -> bool:
    return t1 == t2


def _default_is_assignable(to: Type, source: Type) -> bool:
    if to == source or to.kind in ("dyn", "any", "param"):
        return True
    if to.kind != source.kind or to.name != source.name or len(to.params) != len(source.params):
        return False
    return all(_default_is_assignable(p, q) for p, q in zip(to.params, source.params, strict=True))


def is_equal_or_less_specific(t1: Type, t2: Type) -> bool:  # noqa: PLR0911 (a port of cel-go's rules)
    """Port of cel-go's ``isEqualOrLessSpecific``."""
    if is_dyn(t1) or t1.kind == "param":
        return True
    if is_dyn(t2) or t2.kind == "param":
        return False
    if t1.kind != t2.kind:
        return False
    if t1.kind == "opaque":
        if t1.name != t2.name or len(t1.params) != len(t2.params):
            return False
        return all(is_equal_or_less_specific(p, q) for p, q in zip(t1.params, t2.params, strict=True))
    if t1.kind == "list":
        return is_equal_or_less_specific(t1.params[0], t2.params[0])
    if t1.kind == "map":
        return is_equal_or_less_specific(t1.params[0], t2.params[0]) and is_equal_or_less_specific(
            t1.params[1], t2.params[1]
        )
    if t1.kind == "type":
        return True
    return _exact(t1, t2)


def most_general(t1: Type, t2: Type) -> Type:
    """The less specific of two assignable types."""
    return t1 if is_equal_or_less_specific(t1, t2) else t2


def _not_referenced_in(m: Mapping, t: Type, within: Type) -> bool:
    if t == within:
        return False
    if within.kind == "param":
        sub = m.get(within.name)
        return True if sub is None else _not_referenced_in(m, t, sub)
    if within.kind in ("opaque", "list", "map", "type"):
        return all(_not_referenced_in(m, t, p) for p in within.params)
    return True


def _valid_substitution(m: Mapping, t1: Type, t2: Type) -> tuple[bool, bool]:
    if t1.kind == t2.kind and _exact(t1, t2):
        return True, True
    sub = m.get(t2.name)
    if sub is not None:
        if t1.kind == sub.kind and _exact(t1, sub):
            return True, True
        if _internal_is_assignable(m, t1, sub):
            new = most_general(t1, sub)
            if _not_referenced_in(m, t2, new):
                m[t2.name] = new
            return True, True
        return False, True
    if _not_referenced_in(m, t2, t1):
        m[t2.name] = t1
        return True, False
    return False, False


def _internal_is_assignable(m: Mapping, t1: Type, t2: Type) -> bool:  # noqa: PLR0911 (a port of cel-go's rules)
    if t2.kind == "param":
        valid, has_sub = _valid_substitution(m, t1, t2)
        if valid:
            return True
        if has_sub:
            return False
    if t1.kind == "param":
        valid, _ = _valid_substitution(m, t2, t1)
        return valid
    if is_dyn_or_error(t1) or is_dyn_or_error(t2):
        return True
    if t1.kind == "null":
        return _assignable_from_null(t2)
    if t2.kind == "null":
        return _assignable_from_null(t1)
    if t1.kind in _PRIMITIVE_KINDS or t1.kind == "struct":
        return _default_is_assignable(t2, t1)
    if t1.kind == "type":
        return t2.kind == "type"
    if t1.kind in ("opaque", "list", "map"):
        return (
            t1.kind == t2.kind
            and t1.name == t2.name
            and len(t1.params) == len(t2.params)
            and all(_internal_is_assignable(m, p, q) for p, q in zip(t1.params, t2.params, strict=True))
        )
    return False


def _assignable_from_null(t: Type) -> bool:
    return t.kind in ("opaque", "struct", "any", "duration", "timestamp", "null", "dyn", "param")


def is_assignable(m: Mapping, t1: Type, t2: Type) -> Mapping | None:
    """Whether ``t2`` can be used where ``t1`` is expected; the extended mapping, or ``None``."""
    trial = dict(m)
    return trial if _internal_is_assignable(trial, t1, t2) else None


def is_assignable_list(m: Mapping, l1: list[Type], l2: list[Type]) -> Mapping | None:
    """:func:`is_assignable` over two argument lists of the same length."""
    if len(l1) != len(l2):
        return None
    trial = dict(m)
    for t1, t2 in zip(l1, l2, strict=True):
        if not _internal_is_assignable(trial, t1, t2):
            return None
    return trial


def substitute(m: Mapping, t: Type, *, params_to_dyn: bool) -> Type:
    """Replace the type parameters of ``t`` by what ``m`` maps them to (or ``dyn``)."""
    if t.kind == "param":
        sub = m.get(t.name)
        if sub is not None:
            return substitute(m, sub, params_to_dyn=params_to_dyn)
        return DYN if params_to_dyn else t
    if t.params and t.kind in ("opaque", "list", "map", "type"):
        return Type(t.kind, t.name, tuple(substitute(m, p, params_to_dyn=params_to_dyn) for p in t.params))
    return t


def is_equivalent(t1: Type, t2: Type) -> bool:
    """cel-go's ``IsEquivalentType``: equal, type parameters matching any name."""
    if t1 == t2:
        return True
    if t1.kind != t2.kind or len(t1.params) != len(t2.params):
        return False
    if t1.kind != "param" and t1.name != t2.name:
        return False
    return all(is_equivalent(p, q) for p, q in zip(t1.params, t2.params, strict=True))
