"""The runtime side of the declared functions: implementations by overload id, and their costs.

Implementations follow cel-go v0.26 (standard library, strings v2, sets, optionals) and the
Kubernetes libraries (quantity, semver, lists, regex). Each takes the receiver first for member
overloads and raises :class:`~modelplane.cel.values.EvalError` as cel-go returns an error value.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Final, Protocol, cast

import re2

from modelplane.cel import k8s
from modelplane.cel.decls import Overload
from modelplane.cel.types import Type
from modelplane.cel.values import (
    INT64_MAX,
    INT64_MIN,
    NONE,
    UINT64_MAX,
    EvalError,
    Optional,
    Quantity,
    Semver,
    TypeValue,
    Uint,
    Value,
    compare,
    equal,
    map_find,
    no_such_overload,
    size,
    type_name,
)

Impl = Callable[..., Value]

STRING_TRAVERSAL_COST_FACTOR: Final = 0.1
_SETS_FACTOR: Final = {
    "list_sets_contains_list": 1.0,
    "list_sets_intersects_list": 1.0,
    "list_sets_equivalent_list": 2.0,
}
REGEX_STRING_LENGTH_COST_FACTOR: Final = 0.25


def supported(overload_id: str) -> bool:
    """Whether this environment can evaluate the overload.

    Declared but not provided: timestamps and durations, URLs, IPs and CIDRs, named formats and
    ``string.format``. Selectors over device attributes have no use for them; an expression that
    calls them is refused at compile time rather than answered differently from Kubernetes.
    """
    return overload_id in IMPLS


# ---------------------------------------------------------------------------------------------
# Runtime type matching


_RUNTIME_KINDS: Final[dict[str, Callable[[Value], bool]]] = {
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: type(v) is int,
    "uint": lambda v: type(v) is Uint,
    "double": lambda v: type(v) is float,
    "string": lambda v: type(v) is str,
    "bytes": lambda v: type(v) is bytes,
    "null": lambda v: v is None,
    "list": lambda v: type(v) is list,
    "map": lambda v: isinstance(v, dict),
    "type": lambda v: type(v) is TypeValue,
}
_RUNTIME_NAMES: Final[dict[str, type]] = {
    "kubernetes.Quantity": Quantity,
    "kubernetes.Semver": Semver,
    "optional_type": Optional,
}


def matches(declared: Type, v: Value) -> bool:
    """Whether a runtime value fits a declared parameter type (cel-go's type guards)."""
    if declared.kind in ("dyn", "any", "param"):
        return True
    test = _RUNTIME_KINDS.get(declared.kind)
    if test is not None:
        return test(v)
    expected = _RUNTIME_NAMES.get(declared.name)
    return expected is not None and type(v) is expected


def dispatch(overloads: list[Overload], args: list[Value]) -> Impl:
    """Pick the first candidate overload whose parameter types fit the runtime arguments."""
    for overload in overloads:
        if all(matches(p, a) for p, a in zip(overload.args, args, strict=True)):
            return IMPLS[overload.id]
    raise no_such_overload(overloads[0].function)


# ---------------------------------------------------------------------------------------------
# Conversions


def _int(v: Value) -> int:
    if INT64_MIN <= v <= INT64_MAX:  # type: ignore[operator]  # guarded numeric
        return v  # type: ignore[return-value]
    raise EvalError("integer overflow")


def _uint(v: int) -> Uint:
    if 0 <= v <= UINT64_MAX:
        return Uint(v)
    raise EvalError("unsigned integer overflow")


_INT_TEXT: Final = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT: Final = re.compile(
    r"[+-]?(?:(?:[0-9](?:_?[0-9])*)?\.?(?:[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE
)


def double_to_int(v: float) -> int:
    """``int(double)``: truncation, refusing NaN and values outside int64."""
    if math.isnan(v) or not (-9223372036854775808.0 <= v < 9223372036854775808.0):
        raise EvalError("integer overflow")
    return int(v)


def double_to_uint(v: float) -> Uint:
    """``uint(double)``."""
    if math.isnan(v) or not (0.0 <= v < 18446744073709551616.0):
        raise EvalError("unsigned integer overflow")
    return Uint(int(v))


def string_to_int(v: str) -> int:
    """``int(string)``: Go's ParseInt, base 10, no spaces or underscores."""
    if not _INT_TEXT.fullmatch(v):
        raise EvalError("type conversion error from 'string' to 'int'")
    number = int(v)
    if not INT64_MIN <= number <= INT64_MAX:
        raise EvalError("type conversion error from 'string' to 'int'")
    return number


def string_to_uint(v: str) -> Uint:
    """``uint(string)``."""
    if not re.fullmatch(r"[0-9]+", v) or int(v) > UINT64_MAX:
        raise EvalError("type conversion error from 'string' to 'uint'")
    return Uint(int(v))


_HEX_FLOAT_TEXT: Final = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F_]+\.?[0-9a-fA-F_]*|\.[0-9a-fA-F_]+)[pP][+-]?[0-9_]+")


def string_to_double(v: str) -> float:
    """``double(string)``: Go's ParseFloat."""
    if _HEX_FLOAT_TEXT.fullmatch(v):
        return float.fromhex(v.replace("_", ""))
    text = v.replace("_", "") if "_" in v and re.search(r"[0-9]_[0-9]", v) else v
    if not v or not _FLOAT_TEXT.fullmatch(v) or text in ("", "+", "-", ".", "+.", "-."):
        raise EvalError("type conversion error from 'string' to 'double'")
    try:
        result = float(text)
    except ValueError:
        raise EvalError("type conversion error from 'string' to 'double'") from None
    if math.isinf(result) and not re.search("inf", text, re.IGNORECASE):
        raise EvalError("type conversion error from 'string' to 'double'")
    return result


_BOOL_TEXT: Final = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
                     "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}  # fmt: skip


def string_to_bool(v: str) -> bool:
    """``bool(string)``: Go's ParseBool."""
    if v not in _BOOL_TEXT:
        raise EvalError("type conversion error from 'string' to 'bool'")
    return _BOOL_TEXT[v]


def format_double(v: float) -> str:  # noqa: PLR0911 (Go's cases, in its order)
    """``string(double)``: Go's ``strconv.FormatFloat(v, 'g', -1, 64)``."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, v) < 0 else ""
    if v == 0:
        return sign + "0"
    digits, point = _shortest(abs(v))
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _shortest(v: float) -> tuple[str, int]:
    """The shortest round-trip digits of ``v > 0`` and where the decimal point goes (``0.digits x 10^point``)."""
    text = repr(v)
    mantissa, _, exp_text = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    significant = (whole + fraction).lstrip("0")
    point = len(significant) + (int(exp_text) if exp_text else 0) - len(fraction)
    return significant.rstrip("0"), point


def to_string(v: Value) -> str:
    """``string(x)`` for the primitive types."""
    match v:
        case str():
            return v
        case bool():
            return "true" if v else "false"
        case int():
            return str(int(v))
        case float():
            return format_double(v)
        case bytes():
            try:
                return v.decode()
            except UnicodeDecodeError:
                raise EvalError("invalid UTF-8 in bytes, cannot convert to string") from None
        case _:
            raise no_such_overload("string")


def type_value(v: Value) -> TypeValue:
    """``type(x)``."""
    return TypeValue(type_name(v))


# ---------------------------------------------------------------------------------------------
# Strings (standard library and the strings extension, version 2)

_GO_SPACE: Final = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                             "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")  # fmt: skip


def char_at(s: str, i: int) -> str:
    """``s.charAt(i)``."""
    if i < 0 or i > len(s):
        raise EvalError(f"index out of range: {i}")
    return s[i] if i < len(s) else ""


def index_of(s: str, sub: str, offset: int = 0) -> int:
    """``s.indexOf(sub[, offset])`` in code points."""
    if sub == "":
        return offset
    if offset < 0:
        raise EvalError(f"index out of range: {offset}")
    if offset >= len(s):
        return -1
    return s.find(sub, offset)


def last_index_of(s: str, sub: str, offset: int | None = None) -> int:
    """``s.lastIndexOf(sub[, offset])`` in code points."""
    if offset is None:
        if sub == "":
            return len(s)
        if len(s.encode()) < len(sub.encode()):
            return -1
        offset = len(s) - 1
    if sub == "":
        return offset
    if offset < 0:
        raise EvalError(f"index out of range: {offset}")
    if offset >= len(s):
        return -1
    offset = min(offset, len(s) - len(sub))
    if offset < 0:
        return -1
    return s.rfind(sub, 0, offset + len(sub))


def lower_ascii(s: str) -> str:
    """``s.lowerAscii()``."""
    return "".join(c.lower() if c.isascii() else c for c in s)


def upper_ascii(s: str) -> str:
    """``s.upperAscii()``."""
    return "".join(c.upper() if c.isascii() else c for c in s)


def replace(s: str, old: str, new: str, n: int = -1) -> str:
    """``s.replace(old, new[, n])`` with Go's ``strings.Replace``."""
    if n < 0:
        return s.replace(old, new)
    return s.replace(old, new, n)


def split(s: str, sep: str, n: int = -1) -> list[Value]:
    """``s.split(sep[, n])`` with Go's ``strings.SplitN``."""
    if n == 0:
        return []
    if sep == "":
        parts: list[str] = list(s)
        if 0 < n < len(parts):
            parts = [*parts[: n - 1], "".join(parts[n - 1 :])]
        return list(parts)
    if n < 0:
        return list(s.split(sep))
    return list(s.split(sep, n - 1))


def substring(s: str, start: int, end: int | None = None) -> str:
    """``s.substring(start[, end])``."""
    if end is None:
        if start < 0 or start > len(s):
            raise EvalError(f"index out of range: {start}")
        return s[start:]
    if start > end:
        raise EvalError(f"invalid substring range. start: {start}, end: {end}")
    if start < 0 or start > len(s):
        raise EvalError(f"index out of range: {start}")
    if end < 0 or end > len(s):
        raise EvalError(f"index out of range: {end}")
    return s[start:end]


def trim(s: str) -> str:
    """``s.trim()``: Go's ``strings.TrimSpace``."""
    start, end = 0, len(s)
    while start < end and s[start] in _GO_SPACE:
        start += 1
    while end > start and s[end - 1] in _GO_SPACE:
        end -= 1
    return s[start:end]


def join(items: list[Value], sep: str = "") -> str:
    """``list.join([sep])``."""
    for item in items:
        if type(item) is not str:
            raise EvalError(f"join: invalid input: {item}")
    return sep.join(items)  # type: ignore[arg-type]  # all str, checked above


_QUOTE_ESCAPES: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                         "\\": "\\\\", '"': '\\"'}  # fmt: skip


def quote(s: str) -> str:
    """``strings.quote(s)``."""
    return '"' + "".join(_QUOTE_ESCAPES.get(c, c) for c in s) + '"'


# ---------------------------------------------------------------------------------------------
# Regular expressions: RE2, as cel-go and Kubernetes use Go's regexp (same syntax, linear time).

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


class Match(Protocol):
    """The part of an RE2 match this module uses."""

    def group(self, index: int = 0) -> str:
        """The text of a group."""
        ...

    def span(self) -> tuple[int, int]:
        """Where the match starts and ends."""
        ...


class Regex(Protocol):
    """The part of a compiled RE2 pattern this module uses."""

    def search(self, text: str, pos: int = 0) -> Match | None:
        """Find the leftmost match at or after ``pos``."""
        ...


@lru_cache(maxsize=256)
def compile_regex(pattern: str) -> Regex:
    """Compile an RE2 pattern, raising :class:`EvalError` when it is not valid."""
    try:
        return cast("Regex", re2.compile(pattern, options=_RE2_OPTIONS))
    except re2.error as e:
        raise EvalError(f"error parsing regexp: {_reason(e)}") from None


def _reason(e: Exception) -> str:
    reason = e.args[0] if e.args else str(e)
    return reason.decode() if isinstance(reason, bytes) else str(reason)


def regex_matches(s: str, pattern: str) -> bool:
    """``s.matches(pattern)``: an unanchored search."""
    return compile_regex(pattern).search(s) is not None


def regex_find(s: str, pattern: str) -> str:
    """``s.find(pattern)``: the leftmost match or ``""``."""
    match = compile_regex(pattern).search(s)
    return "" if match is None else str(match.group(0))


def regex_find_all(s: str, pattern: str, n: int = -1) -> list[Value]:
    """``s.findAll(pattern[, n])`` with Go's ``FindAllString`` rules for empty matches."""
    regex = compile_regex(pattern)
    out: list[Value] = []
    pos, previous_end = 0, -1
    while (n < 0 or len(out) < n) and pos <= len(s):
        match = regex.search(s, pos)
        if match is None:
            break
        start, end = match.span()
        accept = True
        if end == pos == start or end == start:
            if start == previous_end:
                accept = False
            pos = end + 1
        else:
            pos = end
        previous_end = end
        if accept:
            out.append(s[start:end])
    return out


# ---------------------------------------------------------------------------------------------
# Lists (Kubernetes lists library) and sets


def is_sorted(items: list[Value]) -> bool:
    """``list.isSorted()``."""
    return all(compare(a, b) <= 0 for a, b in itertools.pairwise(items))


def list_sum(zero: Value) -> Impl:
    """``list.sum()`` starting from the type's zero value."""

    def impl(items: list[Value]) -> Value:
        total = zero
        for item in items:
            total = add(total, item)
        return total

    return impl


def list_min(items: list[Value]) -> Value:
    """``list.min()``."""
    return _extreme(items, "min", 1)


def list_max(items: list[Value]) -> Value:
    """``list.max()``."""
    return _extreme(items, "max", -1)


def _extreme(items: list[Value], name: str, prefer: int) -> Value:
    if not items:
        raise EvalError(f"{name} called on empty list")
    result = items[0]
    for item in items[1:]:
        if compare(result, item) == prefer:
            result = item
    return result


def list_index_of(items: list[Value], item: Value) -> int:
    """``list.indexOf(x)``."""
    for i, x in enumerate(items):
        if _equal_or_false(x, item):
            return i
    return -1


def list_last_index_of(items: list[Value], item: Value) -> int:
    """``list.lastIndexOf(x)``."""
    for i in range(len(items) - 1, -1, -1):
        if _equal_or_false(items[i], item):
            return i
    return -1


def _equal_or_false(a: Value, b: Value) -> bool:
    try:
        return equal(a, b)
    except EvalError:
        return False


def sets_contains(items: list[Value], sub: list[Value]) -> bool:
    """``sets.contains(list, sublist)``: every element of ``sub`` is in ``items``."""
    return all(any(_equal_or_false(x, y) for x in items) for y in sub)


def sets_equivalent(a: list[Value], b: list[Value]) -> bool:
    """``sets.equivalent(a, b)``."""
    return sets_contains(a, b) and sets_contains(b, a)


def sets_intersects(a: list[Value], b: list[Value]) -> bool:
    """``sets.intersects(a, b)``."""
    return any(any(_equal_or_false(x, y) for x in a) for y in b)


# ---------------------------------------------------------------------------------------------
# Arithmetic shared by the operators and ``sum``


def add(a: Value, b: Value) -> Value:
    """``a + b``."""
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return _int(a + b)  # type: ignore[operator]
    if ta is Uint and tb is Uint:
        return _uint(a + b)  # type: ignore[operator]
    if ta is float and tb is float:
        return a + b  # type: ignore[operator]
    if ta is str and tb is str:
        return a + b  # type: ignore[operator]
    if ta is bytes and tb is bytes:
        return a + b  # type: ignore[operator]
    if ta is list and tb is list:
        return [*a, *b]  # type: ignore[misc]
    raise no_such_overload("_+_")


# ---------------------------------------------------------------------------------------------
# Optionals


def optional_value(o: Optional) -> Value:
    """``opt.value()``."""
    if not o.present:
        raise EvalError("optional.none() dereference")
    return o.value


def of_non_zero(v: Value) -> Optional:
    """``optional.ofNonZeroValue(x)``."""
    zero = v is None or v is False or (type(v) in (int, Uint, float) and v == 0)
    zero = zero or (isinstance(v, (str, bytes, list, dict)) and len(v) == 0)
    return NONE if zero else Optional(v, present=True)


def unwrap(items: list[Value]) -> list[Value]:
    """``optional.unwrap(list)``."""
    out: list[Value] = []
    for item in items:
        if type(item) is not Optional:
            raise EvalError(f"value {item} is not optional")
        if item.present:
            out.append(item.value)
    return out


# ---------------------------------------------------------------------------------------------
# Quantity and semver


def _quantity(text: str) -> Quantity:
    try:
        return k8s.parse_quantity(text)
    except k8s.QuantityError as e:
        raise EvalError(str(e)) from None


def _is_quantity(text: str) -> bool:
    try:
        k8s.parse_quantity(text)
    except k8s.QuantityError:
        return False
    return True


def _as_integer(q: Quantity) -> int:
    value = k8s.quantity_as_int64(q)
    if value is None:
        raise EvalError("cannot convert value to integer")
    return value


def _semver(text: str, normalize: bool = False) -> Semver:  # noqa: FBT001, FBT002 (CEL's positional argument)
    try:
        return k8s.parse_semver(text, normalize=normalize)
    except k8s.SemverError as e:
        raise EvalError(str(e)) from None


def _is_semver(text: str, normalize: bool = False) -> bool:  # noqa: FBT001, FBT002 (CEL's positional argument)
    try:
        k8s.parse_semver(text, normalize=normalize)
    except k8s.SemverError:
        return False
    return True


def _identity(v: Value) -> Value:
    return v


def _bytes_size(v: bytes) -> int:
    return len(v)


IMPLS: Final[dict[str, Impl]] = {
    # conversions
    "bool_to_bool": _identity,
    "string_to_bool": string_to_bool,
    "bytes_to_bytes": _identity,
    "string_to_bytes": lambda s: s.encode(),
    "double_to_double": _identity,
    "int64_to_double": float,
    "string_to_double": string_to_double,
    "uint64_to_double": float,
    "to_dyn": _identity,
    "int64_to_int64": _identity,
    "double_to_int64": double_to_int,
    "string_to_int64": string_to_int,
    "uint64_to_int64": lambda v: _int(int(v)),
    "string_to_string": _identity,
    "bool_to_string": to_string,
    "bytes_to_string": to_string,
    "double_to_string": to_string,
    "int64_to_string": to_string,
    "uint64_to_string": to_string,
    "type": type_value,
    "uint64_to_uint64": _identity,
    "double_to_uint64": double_to_uint,
    "int64_to_uint64": _uint,
    "string_to_uint64": string_to_uint,
    # sizes
    "size_bytes": _bytes_size,
    "bytes_size": _bytes_size,
    "size_list": len,
    "list_size": len,
    "size_map": len,
    "map_size": len,
    "size_string": len,
    "string_size": len,
    # strings
    "contains_string": lambda s, sub: sub in s,
    "starts_with_string": lambda s, p: s.startswith(p),
    "ends_with_string": lambda s, p: s.endswith(p),
    "matches": regex_matches,
    "matches_string": regex_matches,
    "string_char_at_int": char_at,
    "string_index_of_string": index_of,
    "string_index_of_string_int": index_of,
    "string_last_index_of_string": last_index_of,
    "string_last_index_of_string_int": last_index_of,
    "string_lower_ascii": lower_ascii,
    "string_upper_ascii": upper_ascii,
    "string_replace_string_string": replace,
    "string_replace_string_string_int": replace,
    "string_split_string": split,
    "string_split_string_int": split,
    "string_substring_int": substring,
    "string_substring_int_int": substring,
    "string_trim": trim,
    "list_join": join,
    "list_join_string": join,
    "strings_quote": quote,
    # regex (Kubernetes)
    "string_find_string": regex_find,
    "string_find_all_string": regex_find_all,
    "string_find_all_string_int": regex_find_all,
    # lists (Kubernetes)
    "list_a_index_of_int": list_index_of,
    "list_a_last_index_of_int": list_last_index_of,
    # sets
    "list_sets_contains_list": sets_contains,
    "list_sets_equivalent_list": sets_equivalent,
    "list_sets_intersects_list": sets_intersects,
    # optionals
    "optional_of": lambda v: Optional(v, present=True),
    "optional_ofNonZeroValue": of_non_zero,
    "optional_none": lambda: NONE,
    "optional_hasValue": lambda o: o.present,
    "optional_value": optional_value,
    "optional_or_optional": lambda o, other: o if o.present else other,
    "optional_orValue_value": lambda o, v: o.value if o.present else v,
    "optional_unwrap": unwrap,
    "optional_unwrapOpt": unwrap,
    "list_first": lambda items: Optional(items[0], present=True) if items else NONE,
    "list_last": lambda items: Optional(items[-1], present=True) if items else NONE,
    # quantity (Kubernetes)
    "string_to_quantity": _quantity,
    "is_quantity_string": _is_quantity,
    "quantity_sign": k8s.quantity_sign,
    "quantity_is_greater_than": lambda a, b: k8s.compare_quantities(a, b) == 1,
    "quantity_is_less_than": lambda a, b: k8s.compare_quantities(a, b) == -1,
    "quantity_compare_to": k8s.compare_quantities,
    "quantity_get_float": k8s.quantity_as_float,
    "quantity_get_int": _as_integer,
    "quantity_is_integer": lambda q: k8s.quantity_as_int64(q) is not None,
    "quantity_add": k8s.add_quantities,
    "quantity_add_int": lambda a, b: k8s.add_quantities(a, k8s.quantity_from_int(b)),
    "quantity_sub": lambda a, b: k8s.add_quantities(a, b, negate=True),
    "quantity_sub_int": lambda a, b: k8s.add_quantities(a, k8s.quantity_from_int(b), negate=True),
    # semver (Kubernetes)
    "string_to_semver": _semver,
    "string_bool_to_semver": _semver,
    "is_semver_string": _is_semver,
    "is_semver_string_bool": _is_semver,
    "semver_is_greater_than": lambda a, b: a.compare(b) == 1,
    "semver_is_less_than": lambda a, b: a.compare(b) == -1,
    "semver_compare_to": lambda a, b: a.compare(b),
    "semver_major": lambda v: k8s.semver_int(v.major),
    "semver_minor": lambda v: k8s.semver_int(v.minor),
    "semver_patch": lambda v: k8s.semver_int(v.patch),
}

for _name in ("int", "uint", "double", "bool", "string", "bytes"):
    IMPLS[f"list_{_name}_is_sorted_bool"] = is_sorted
    IMPLS[f"list_{_name}_max_{_name}"] = list_max
    IMPLS[f"list_{_name}_min_{_name}"] = list_min
IMPLS["list_int_sum_int"] = list_sum(0)
IMPLS["list_uint_sum_uint"] = list_sum(Uint(0))
IMPLS["list_double_sum_double"] = list_sum(0.0)


def lookup(container: Value, key: Value) -> tuple[bool, Value]:
    """Find ``key`` in a map, or index a list (cel-go's ``refQualify`` without the presence test)."""
    if isinstance(container, dict):
        return map_find(container, key)
    if type(container) is list:
        index = list_index(key)
        if 0 <= index < len(container):
            return True, container[index]
        return False, None
    return False, None


def list_index(key: Value) -> int:
    """A list index from an int, uint or integral double (cel-go's ``IndexOrError``)."""
    if type(key) is int or type(key) is Uint:
        return int(key)
    if type(key) is float:
        if key.is_integer() and INT64_MIN <= key <= INT64_MAX:
            return int(key)
        raise EvalError(f"unsupported index value {key} in list")
    raise EvalError(f"unsupported index type '{type_name(key)}' in list")


# ---------------------------------------------------------------------------------------------
# Runtime cost (cel-go's CostTracker with Kubernetes' CallCost)


def _traversal_cost(v: Value) -> int:
    if isinstance(v, (str, bytes)):
        return int(len(v) * STRING_TRAVERSAL_COST_FACTOR)
    if isinstance(v, list):
        return sum(_traversal_cost(x) for x in v)
    if isinstance(v, dict):
        return sum(_traversal_cost(k) + _traversal_cost(x) for k, x in v.items())
    return 1


def _ceil_cost(x: float) -> int:
    return math.ceil(x)


CostFn = Callable[[list[Value], Value], int]


def _string_cost(args: list[Value], _result: Value) -> int:
    return _ceil_cost(size(args[0]) * STRING_TRAVERSAL_COST_FACTOR)


def _double_string_cost(args: list[Value], _result: Value) -> int:
    return _ceil_cost(size(args[0]) * 2 * STRING_TRAVERSAL_COST_FACTOR)


def _regex_cost(args: list[Value], _result: Value) -> int:
    string_cost = _ceil_cost((1.0 + size(args[0])) * STRING_TRAVERSAL_COST_FACTOR)
    return string_cost * _ceil_cost(size(args[1]) * REGEX_STRING_LENGTH_COST_FACTOR)


def _smaller_string_cost(args: list[Value], _result: Value) -> int:
    return _ceil_cost(min(size(args[0]), size(args[1])) * STRING_TRAVERSAL_COST_FACTOR)


def _equality_cost(args: list[Value], result: Value) -> int:
    if isinstance(args[0], (Quantity, Semver)):
        return 1
    return _smaller_string_cost(args, result)


def _sets_cost(factor: float) -> CostFn:
    return lambda args, _result: 1 + int(size(args[0]) * size(args[1]) * factor)


_COST_BY_OVERLOAD: Final[dict[str, int | CostFn]] = {
    **{overload: _sets_cost(factor) for overload, factor in _SETS_FACTOR.items()},
    "starts_with_string": _string_cost,
    "ends_with_string": _string_cost,
    "string_to_bytes": _string_cost,
    "bytes_to_string": _string_cost,
    "strings_quote": _string_cost,
    "in_list": lambda args, _result: size(args[1]),
    "equals": _equality_cost,
    "not_equals": _equality_cost,
    "add_string": lambda args, _result: _ceil_cost((size(args[0]) + size(args[1])) * STRING_TRAVERSAL_COST_FACTOR),
    "add_bytes": lambda args, _result: _ceil_cost((size(args[0]) + size(args[1])) * STRING_TRAVERSAL_COST_FACTOR),
    "matches": _regex_cost,
    "matches_string": _regex_cost,
    "contains_string": lambda args, _result: (
        _ceil_cost(size(args[0]) * STRING_TRAVERSAL_COST_FACTOR)
        * _ceil_cost(size(args[1]) * STRING_TRAVERSAL_COST_FACTOR)
    ),
}
_UNIT_COST_FUNCTIONS: Final = ("sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
                                "compareTo", "add", "sub", "major", "minor", "patch")  # fmt: skip
_COST_BY_FUNCTION: Final[dict[str, int | CostFn]] = {
    **dict.fromkeys(("lowerAscii", "upperAscii", "substring", "trim"), _string_cost),
    **dict.fromkeys(("replace", "split"), _double_string_cost),
    "join": lambda _args, result: _ceil_cost(size(result) * 2 * STRING_TRAVERSAL_COST_FACTOR),
    "find": _regex_cost,
    "findAll": _regex_cost,
    **dict.fromkeys(("quantity", "isQuantity", "semver", "isSemver"), _string_cost),
    **dict.fromkeys(_UNIT_COST_FUNCTIONS, 1),
}


def cost_function(function: str, overload_id: str) -> int | CostFn:  # noqa: PLR0911 (cel-go's order of cases)
    """The runtime cost of a call, as Kubernetes' cost estimator and cel-go's tracker charge it.

    Resolved once per call site: a fixed cost, or a function of the arguments and the result.
    """
    if overload_id in _SETS_FACTOR:
        return _COST_BY_OVERLOAD[overload_id]
    if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and overload_id.startswith("list_"):
        return lambda args, _result: _traversal_cost(args[0])
    if function in ("indexOf", "lastIndexOf"):
        return lambda args, _result: int(size(args[0]) * STRING_TRAVERSAL_COST_FACTOR)
    if function in _COST_BY_FUNCTION:
        return _COST_BY_FUNCTION[function]
    if overload_id in _COST_BY_OVERLOAD:
        return _COST_BY_OVERLOAD[overload_id]
    if overload_id.startswith(("less_", "greater_")) and overload_id.endswith(("_string", "_bytes")):
        return _smaller_string_cost
    return 1


def call_cost(function: str, overload_id: str, args: list[Value], result: Value) -> int:
    """The runtime cost of one call (see :func:`cost_function`)."""
    cost = cost_function(function, overload_id)
    return cost if isinstance(cost, int) else cost(args, result)
