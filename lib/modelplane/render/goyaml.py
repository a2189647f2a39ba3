"""YAML out the way Crossplane's Go CLI writes it (``modelplane.documents`` reads it the way it reads it).

``crossplane render`` prints each object through Kubernetes' JSON serializer
in YAML mode: the object is marshalled to JSON, read back with go-yaml v2
(``sigs.k8s.io/yaml.JSONToYAML``) and marshalled again with go-yaml v2. The
visible consequences, all reproduced here:

- map keys are sorted with go-yaml's "natural" order (digit runs compare as
  numbers, letters sort before other characters), not plain code-point order;
- a string that go-yaml would read back as something else (``"true"``,
  ``"1"``, ``"2024-01-01T00:00:00Z"``, ``"y"``, ``"1:20"``...) is double-quoted,
  a string with a newline is a literal block, anything else is plain when the
  emitter allows it and single-quoted otherwise;
- integral numbers print as integers, other numbers in Go's shortest ``%g``;
- lines are folded at 80 columns, sequences inside maps are not indented.

The emitter is PyYAML's, a port of the same libyaml emitter go-yaml v2 ports,
driven with explicit scalar styles so its choices match go-yaml's.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

import yaml

__all__ = ["dump_document"]

_BASE60_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_TIMESTAMP_PREFIX = re.compile(r"^[0-9]{4}-")
# The subset of YAML timestamps go-yaml v2 recognises (time.Parse layouts
# "2006-1-2T15:4:5.999999999Z07:00", its lower-case 't' twin,
# "2006-1-2 15:4:5.999999999" and "2006-1-2").
_TIMESTAMPS = (
    re.compile(
        r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}[Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?"
        r"(Z|[+-][0-9]{2}:[0-9]{2})$"
    ),
    re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2} [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?$"),
    re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}$"),
)
_SPECIAL = {
    *("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"),
    *("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"),
    *("", "~", "null", "Null", "NULL"),
    *(".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"),
    *("-.inf", "-.Inf", "-.INF", "<<"),
}
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def _parse_go_int(s: str) -> int | None:
    """strconv.ParseInt/ParseUint with base 0 (0x, 0o, 0b, leading-0 octal)."""
    body = s[1:] if s[:1] in "+-" else s
    sign = -1 if s[:1] == "-" else 1
    lower = body.lower()
    try:
        if lower.startswith("0x"):
            value = int(body[2:], 16)
        elif lower.startswith("0o"):
            value = int(body[2:], 8)
        elif lower.startswith("0b"):
            value = int(body[2:], 2)
        elif len(body) > 1 and body[0] == "0":
            value = int(body[1:], 8)
        else:
            value = int(body, 10) if body.isdigit() else None  # type: ignore[assignment]
    except ValueError:
        return None
    if value is None or not body.isascii():
        return None
    value *= sign
    if _INT64_MIN <= value <= _UINT64_MAX:
        return value
    return None


def _resolves_to_non_string(s: str) -> bool:  # noqa: PLR0911 - mirrors go-yaml resolve() branch by branch
    """Whether go-yaml v2 would read ``s``, written plain, as anything but a string."""
    if s in _SPECIAL:
        return True
    hint = s[0]
    if hint == ".":
        try:
            float(s)
        except ValueError:
            return False
        return not any(c.isalpha() and c not in "eE" for c in s)
    if not (hint.isascii() and (hint.isdigit() or hint in "+-")):
        return False
    if _TIMESTAMP_PREFIX.match(s) and any(t.match(s) for t in _TIMESTAMPS):
        return True
    plain = s.replace("_", "")
    if plain and _parse_go_int(plain) is not None:
        return True
    if _YAML_STYLE_FLOAT.match(plain):
        return True
    if plain.startswith("-0b"):
        return _parse_go_int("-" + plain[1:]) is not None
    return False


def _needs_quotes(s: str) -> bool:
    return _resolves_to_non_string(s) or bool(_BASE60_FLOAT.match(s))


def _go_key_less(a: str, b: str) -> bool:
    """go-yaml v2's keyList.Less for two string keys."""
    for i in range(min(len(a), len(b))):
        ca, cb = a[i], b[i]
        if ca == cb:
            continue
        al, bl = ca.isalpha(), cb.isalpha()
        if al and bl:
            return ca < cb
        if al or bl:
            return bl
        an = bn = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and a[j].isdigit():
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(a) and a[ai].isdigit():
            an = an * 10 + (ord(a[ai]) - ord("0"))
            ai += 1
        bi = i
        while bi < len(b) and b[bi].isdigit():
            bn = bn * 10 + (ord(b[bi]) - ord("0"))
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ca < cb
    return len(a) < len(b)


def _go_key_cmp(a: str, b: str) -> int:
    if _go_key_less(a, b):
        return -1
    if _go_key_less(b, a):
        return 1
    return 0


_key = functools.cmp_to_key(_go_key_cmp)


def format_float(f: float) -> str:  # noqa: PLR0911 - one return per strconv output form
    """strconv.FormatFloat(f, 'g', -1, 64) as go-yaml prints floats."""
    if math.isnan(f):
        return ".nan"
    if math.isinf(f):
        return ".inf" if f > 0 else "-.inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    sign, digits, exponent = Decimal(repr(f)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    if not isinstance(exponent, int):  # NaN and infinities were handled above
        msg = f"cannot format {f!r}"
        raise ValueError(msg)
    exp = len(ds) + exponent - 1  # decimal exponent of the first digit
    prefix = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{prefix}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{prefix}0.{'0' * (-exp - 1)}{ds}"
    if len(ds) <= exp + 1:
        return f"{prefix}{ds}{'0' * (exp + 1 - len(ds))}"
    return f"{prefix}{ds[: exp + 1]}.{ds[exp + 1 :]}"


def _number(v: float) -> str:
    # Struct numbers are doubles; Go turns integral ones that fit an int64
    # back into integers on the JSON round trip, and go-yaml re-reads integral
    # values up to 2^64-1 as (unsigned) integers.
    if v.is_integer() and abs(v) < 1e21:
        i = int(v)
        if _INT64_MIN <= i <= _UINT64_MAX:
            return str(i)
    return format_float(v)


def _scalar(value: str, style: str | None) -> yaml.ScalarEvent:
    return yaml.ScalarEvent(anchor=None, tag=None, implicit=(True, True), value=value, style=style)


def _events(obj: Any) -> Iterator[yaml.Event]:  # noqa: ANN401, PLR0912 - any JSON value, one branch per type
    if isinstance(obj, Mapping):
        yield yaml.MappingStartEvent(anchor=None, tag=None, implicit=True, flow_style=False)
        for k in sorted(obj, key=_key):
            yield from _events(str(k))
            yield from _events(obj[k])
        yield yaml.MappingEndEvent()
    elif isinstance(obj, str):
        if "\n" in obj:
            yield _scalar(obj, "|")
        elif _needs_quotes(obj):
            yield _scalar(obj, '"')
        else:
            yield _scalar(obj, None)
    elif isinstance(obj, bool):
        yield _scalar("true" if obj else "false", None)
    elif isinstance(obj, int):
        yield _scalar(str(obj), None)
    elif isinstance(obj, float):
        yield _scalar(_number(obj), None)
    elif obj is None:
        yield _scalar("null", None)
    elif isinstance(obj, Sequence):
        yield yaml.SequenceStartEvent(anchor=None, tag=None, implicit=True, flow_style=False)
        for item in obj:
            yield from _events(item)
        yield yaml.SequenceEndEvent()
    else:
        msg = f"cannot write {type(obj).__name__} as YAML"
        raise TypeError(msg)


def dump_document(obj: Mapping[str, Any]) -> str:
    """Return ``obj`` as one YAML document, as go-yaml v2 marshals it (no ``---``)."""
    events: list[yaml.Event] = [
        yaml.StreamStartEvent(),
        yaml.DocumentStartEvent(explicit=False),
        *_events(obj),
        yaml.DocumentEndEvent(explicit=False),
        yaml.StreamEndEvent(),
    ]
    out: str = yaml.emit(events, width=80, indent=2, allow_unicode=True)
    return out
