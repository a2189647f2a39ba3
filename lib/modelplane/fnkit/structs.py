"""Read fields of a protobuf Struct in place: the one Struct reader every function uses.

Converting a Struct to a dict and validating it as a whole model costs about half a
millisecond an object: most of a call on a fleet of hundreds of clusters. The
readers here read one value each. The checked ones (``need``, ``obj``, ``whole``,
``string``...) read it with the type, and the bounds and pattern its generated
model declares (``bounds``: taken from the model, never copied), and raise
``UnclearError`` for a value that does not read so; the caller then lets the model
parse the whole object (``modelplane.fnkit.inputs.read_one``), so it is used or
left out exactly as the model decides. The lenient ones (``string_at``,
``labels_at``) read a path for a selection or a name, empty where it does not fit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import pydantic
from google.protobuf import struct_pb2 as structpb

from modelplane.layout import show
from modelplane.problems import Problem
from modelplane.readiness import READY, VERDICT_FIELD, VERDICT_GROUP, Entry, Readiness, readiness

_NULL = (None, "null_value")

Fields = Mapping[str, Any]
"""The ``fields`` of a protobuf Struct: names to ``Value`` messages."""
Value = Any
"""A ``google.protobuf.Value``, or None for a field that is absent."""
T = TypeVar("T")


class UnclearError(Exception):
    """A field does not read as its model expects: let the model parse the object."""


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: each is made once, at import
class Bounds:
    """What a generated model declares of one field: number bounds, lengths (of a string or list) and pattern."""

    low: float | None = None
    high: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: re.Pattern[str] | None = None


def bounds(model: type[pydantic.BaseModel], field: str) -> Bounds:
    """The bounds ``model`` declares for ``field`` (as generated from the XRD's schema)."""
    found: dict[str, Any] = {}
    for item in model.model_fields[field].metadata:
        for name in ("ge", "le", "min_length", "max_length", "pattern"):
            if getattr(item, name, None) is not None:
                found[name] = getattr(item, name)
    pattern = found.get("pattern")
    return Bounds(
        found.get("ge"),
        found.get("le"),
        found.get("min_length"),
        found.get("max_length"),
        re.compile(pattern) if pattern is not None else None,
    )


_ANY = Bounds()

# Readers of one value. Absent and null read as None; anything else must have the model's type.
# A set oneof member reads as itself, an unset one as its zero value: only a zero needs asking which is set.


def need(value: T | None) -> T:
    """A required field: absent or null does not validate."""
    if value is None:
        raise UnclearError
    return value


def null(value: Value) -> None:
    """Absent or null, or not readable as the field's type."""
    if value is not None and value.WhichOneof("kind") not in _NULL:
        raise UnclearError


def obj(value: Value) -> Fields | None:
    """An object's fields."""
    if value is not None:
        fields: Fields = value.struct_value.fields
        if fields or value.HasField("struct_value"):
            return fields
    null(value)
    return None


def objects(value: Value, limits: Bounds = _ANY) -> Sequence[Fields]:
    """A list of objects (empty when absent or null), at most ``limits.max_length`` of them."""
    items = _items(value)
    if limits.max_length is not None and len(items) > limits.max_length:
        raise UnclearError
    return [need(obj(item)) for item in items]


def strings(value: Value) -> frozenset[str]:
    """A list of strings, as a set (empty when absent or null)."""
    return frozenset(need(text(item)) for item in _items(value))


def _items(value: Value) -> Sequence[Value]:
    """A list's items (none when absent or null)."""
    if value is None:
        return ()
    items: Sequence[Value] = value.list_value.values
    if not items and not value.HasField("list_value"):
        null(value)
        return ()
    return items


def text(value: Value) -> str | None:
    """A string."""
    if value is not None:
        written: str = value.string_value
        if written or value.HasField("string_value"):
            return written
    null(value)
    return None


def whole(value: Value, limits: Bounds = _ANY) -> int | None:
    """An integer within ``limits``."""
    if value is not None:
        number: float = value.number_value
        if number or value.HasField("number_value"):
            low, high = limits.low, limits.high
            if not number.is_integer() or (low is not None and number < low) or (high is not None and number > high):
                raise UnclearError
            return int(number)
    null(value)
    return None


def flag(value: Value) -> bool | None:
    """A boolean."""
    if value is not None:
        written: bool = value.bool_value
        if written or value.HasField("bool_value"):
            return written
    null(value)
    return None


@lru_cache(maxsize=4096)
def _fits(written: str, limits: Bounds) -> bool:
    if limits.max_length is not None and len(written) > limits.max_length:
        return False
    if limits.min_length is not None and len(written) < limits.min_length:
        return False
    # fullmatch: the whole string, as the model's regex engine reads `^...$` (not before a final newline).
    return limits.pattern is None or limits.pattern.fullmatch(written) is not None


def string(value: Value, limits: Bounds) -> str | None:
    """A string of the length and pattern of ``limits``."""
    written = text(value)
    if written is not None and not _fits(written, limits):
        raise UnclearError
    return written


def labels(value: Value) -> dict[str, str]:
    """A map of strings (labels, annotations)."""
    fields = obj(value)
    if fields is None:
        return {}
    return {key: need(text(item)) for key, item in fields.items()}


def forget() -> None:
    """Forget the strings already checked and the conditions read (a cold read, for the bench)."""
    _fits.cache_clear()
    _CONDITIONS.clear()


# Lenient readers: a path read for a selection or a name.


def string_at(struct: structpb.Struct, *path: str) -> str:
    """The string at ``path`` in ``struct``; empty where the path is missing or not a string."""
    value: structpb.Value | None = None
    fields: Mapping[str, structpb.Value] = struct.fields
    for key in path:
        value = fields.get(key)
        if value is None:
            return ""
        fields = value.struct_value.fields if value.HasField("struct_value") else {}
    return _string_value(value)


def labels_at(struct: structpb.Struct) -> dict[str, str] | None:
    """``metadata.labels`` of ``struct``: {} when absent, None when not a map of strings."""
    meta = struct.fields.get("metadata")
    if meta is None or _null(meta):
        return {}
    if not meta.HasField("struct_value"):
        return None
    found = meta.struct_value.fields.get("labels")
    if found is None or _null(found):
        return {}
    if not found.HasField("struct_value"):
        return None
    out: dict[str, str] = {}
    for key, value in found.struct_value.fields.items():
        if not value.HasField("string_value"):
            return None
        out[key] = value.string_value
    return out


def name_and_deleting(fields: Fields) -> tuple[str, bool]:
    """An object's ``metadata.name`` ("" when it has none) and whether it has a ``deletionTimestamp``."""
    metadata = fields.get("metadata")
    if metadata is None or not metadata.HasField("struct_value"):
        return "", False
    meta = metadata.struct_value.fields
    name = meta.get("name")
    deleting = meta.get("deletionTimestamp")
    return (
        name.string_value if name is not None else "",
        deleting is not None and deleting.WhichOneof("kind") not in _NULL,
    )


def identity(fields: Fields) -> tuple[str, str] | None:
    """The object's ``uid`` and ``resourceVersion``, when it has both."""
    metadata = fields.get("metadata")
    if metadata is None:
        return None
    meta = metadata.struct_value.fields
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    if uid is None or version is None:
        return None
    found = uid.string_value, version.string_value
    return found if found[0] and found[1] else None


def described(struct: structpb.Struct, name: str, index: int) -> str:
    """``Kind namespace/name`` of an object, for a message; ``name[index]`` when it has neither name."""
    kind = _string_value(struct.fields.get("kind"))
    meta = struct.fields.get("metadata")
    fields = meta.struct_value.fields if meta is not None and meta.HasField("struct_value") else {}
    parts = [_string_value(fields.get("namespace")), _string_value(fields.get("name"))]
    named = "/".join(p for p in parts if p)
    return f"{kind or 'object'} {named}" if named else f"{name}[{index}]"


# Conditions, read as ``modelplane.readiness`` reads them.


def readiness_at(
    fields: Fields | None, typ: str = READY, problems: list[Problem] | None = None, *, strict: bool = False
) -> Readiness:
    """Condition ``typ`` of an object (a Struct's ``fields``), as ``modelplane.readiness`` reads it.

    What does not fit (a status that is not an object, an entry that is not one, a field of the
    wrong type) is left out and added to ``problems``; ``strict`` also requires each entry's
    ``type`` and ``status``, as the generated models do, and raises ``UnclearError`` at the first
    problem (for the checked readers).
    """
    out = problems if problems is not None else []
    before = len(out)
    # Without a list to report to, entries of other types are not checked (the common read, kept cheap).
    entries, generation = _entries(fields or {}, typ, out, strict=strict, check=strict or problems is not None)
    if strict and len(out) > before:
        raise UnclearError
    verdict = _verdict_at(fields, strict=strict) if typ == READY and fields else None
    return readiness(entries, generation, typ, verdict=verdict)


def _verdict_at(fields: Fields, *, strict: bool) -> bool | None:
    """A Modelplane XR's ``status.readyVerdict`` (``modelplane.readiness``, rule 4); None elsewhere.

    ``strict``: one that is neither a boolean nor null raises ``UnclearError``, as ``flag`` does.
    """
    api_version, status = fields.get("apiVersion"), fields.get("status")
    if api_version is None or not api_version.string_value.startswith(VERDICT_GROUP) or status is None:
        return None
    found = status.struct_value.fields.get(VERDICT_FIELD) if status.HasField("struct_value") else None
    if strict:
        return flag(found)
    return found.bool_value if found is not None and found.HasField("bool_value") else None


# The string fields of a condition entry checked when present (the models check lastTransitionTime too).
_KEYS = ("type", "status", "reason", "message")
_STRICT_KEYS = (*_KEYS, "lastTransitionTime")
_REQUIRED = frozenset({"type", "status"})


class _Conditions(dict[tuple[bytes, str, bool, bool], tuple[tuple[Entry, ...], tuple[Problem, ...]]]):
    """Lists of conditions read: by their bytes and how they were read, what they read as (``_entries``)."""

    held = 0  # bytes counted against the budget

    def clear(self) -> None:
        super().clear()
        self.held = 0


_CONDITIONS = _Conditions()
# What a remembered list costs beyond its bytes: the key, its entries and a dict slot. A few MiB
# hold a fleet's worth: objects in the same state share their lists.
_CONDITION_OVERHEAD = 400
_CONDITIONS_BUDGET = 4 << 20


def _entries(
    fields: Fields, typ: str, out: list[Problem], *, strict: bool, check: bool
) -> tuple[Sequence[Entry], int | None]:
    """The entries of type ``typ`` (each entry checked when ``check``), and ``metadata.generation``."""
    generation = _integer_in(fields.get("metadata"), "generation", out, "metadata.generation")
    status = fields.get("status")
    if status is None or _null(status):
        return [], generation
    if not status.HasField("struct_value"):
        out.append(Problem("status", f"expected an object, got {_kind(status)}"))
        return [], generation
    listed = status.struct_value.fields.get("conditions")
    if listed is None or _null(listed):
        return [], generation
    if not listed.HasField("list_value"):
        out.append(Problem("status.conditions", f"expected a list, got {_kind(listed)}"))
        return [], generation
    # A list of conditions reads as any list of the same bytes did (they pin its content): objects share
    # conditions, and a function reads the same objects call after call.
    values = listed.list_value
    key = (values.SerializeToString(), typ, strict, check)
    found = _CONDITIONS.get(key)
    if found is None:
        said: list[Problem] = []
        found = _CONDITIONS[key] = (_read_entries(values.values, typ, said, strict=strict, check=check), tuple(said))
        _CONDITIONS.held += len(key[0]) + _CONDITION_OVERHEAD
        if _CONDITIONS.held > _CONDITIONS_BUDGET:  # forget them all: the next calls remember what they read
            _CONDITIONS.clear()
    out.extend(found[1])
    return found[0], generation


def _read_entries(
    values: Sequence[Value], typ: str, out: list[Problem], *, strict: bool, check: bool
) -> tuple[Entry, ...]:
    """The entries of type ``typ`` of a list of conditions (each entry checked when ``check``)."""
    entries = []
    for index, item in enumerate(values):
        if not item.HasField("struct_value"):
            out.append(Problem(f"status.conditions[{index}]", f"expected an object, got {_kind(item)}"))
            continue
        got = item.struct_value.fields
        if check:
            _check_entry(got, f"status.conditions[{index}]", out, strict=strict)
        kind = got.get("type")
        if kind is None or kind.string_value != typ:
            if strict:
                _integer_in(item, "observedGeneration", out, "status.conditions", index)
            continue
        state, reason, message, since = (
            got.get("status"),
            got.get("reason"),
            got.get("message"),
            got.get("lastTransitionTime"),
        )
        entries.append(
            Entry(
                typ,
                state.string_value if state is not None else "",
                reason.string_value if reason is not None else "",
                message.string_value if message is not None else "",
                since.string_value if since is not None else "",
                _integer_in(item, "observedGeneration", out, "status.conditions", index),
            )
        )
    return tuple(entries)


def _check_entry(got: Fields, where: str, out: list[Problem], *, strict: bool) -> None:
    """Name each string field of a condition entry that is not one (and, ``strict``, a missing type or status)."""
    for key in _STRICT_KEYS if strict else _KEYS:
        value = got.get(key)
        kind = value.WhichOneof("kind") if value is not None else None
        if kind == "string_value":
            continue
        if kind not in _NULL and value is not None:
            out.append(Problem(f"{where}.{key}", f"expected a string, got {_kind(value)}"))
        elif strict and key in _REQUIRED:
            out.append(Problem(f"{where}.{key}", "required"))


def _integer_in(value: Value, name: str, out: list[Problem], where: str, index: int | None = None) -> int | None:
    """Integer field ``name`` of an object; a value that is not one is named (``where[index].name``) in ``out``."""
    found = value.struct_value.fields.get(name) if value is not None and value.HasField("struct_value") else None
    if found is None:
        return None
    number: float = found.number_value
    if (number or found.HasField("number_value")) and number.is_integer():
        return int(number)
    if not _null(found):
        at = where if index is None else f"{where}[{index}].{name}"
        out.append(Problem(at, f"expected an integer, got {_kind(found)}"))
    return None


def _null(value: structpb.Value) -> bool:
    return value.WhichOneof("kind") in _NULL


def _string_value(value: structpb.Value | None) -> str:
    # A Value of another kind reads its unset string member: "".
    return value.string_value if value is not None else ""


def _kind(value: structpb.Value) -> str:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return show(value.string_value)
    if kind == "number_value":
        return show(value.number_value)
    if kind == "bool_value":
        return show(value.bool_value)
    return "a list" if kind == "list_value" else "an object"
