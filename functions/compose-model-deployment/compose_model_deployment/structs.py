"""Reading fields of a protobuf Struct in place, each checked as the generated models check it.

Converting a Struct to a dict and validating it as a whole model costs about half a
millisecond an object: most of a call on a fleet of hundreds of clusters. The
readers here read one value each, with the type, bounds and pattern its model
declares; a value that does not read so raises ``UnclearError``, and the caller then
lets the model parse the whole object, so it is used or skipped exactly as the model
decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, TypeVar

import pydantic
from google.protobuf import struct_pb2 as structpb

from modelplane import protojson

# The generated models' patterns, whole-string (pydantic's `$` does not match before a final newline).
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NULL = (None, "null_value")

Fields = Mapping[str, Any]
"""The ``fields`` of a protobuf Struct: names to ``Value`` messages."""
Value = Any
"""A ``google.protobuf.Value``, or None for a field that is absent."""
T = TypeVar("T")


class UnclearError(Exception):
    """A field does not read as its model expects: let the model parse the object."""


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


def objects(value: Value, max_length: int | None = None) -> Sequence[Fields]:
    """A list of objects (empty when absent or null)."""
    if value is None:
        return ()
    items = value.list_value.values
    if not items and not value.HasField("list_value"):
        null(value)
        return ()
    if max_length is not None and len(items) > max_length:
        raise UnclearError
    return [need(obj(item)) for item in items]


def strings(value: Value) -> frozenset[str]:
    """A list of strings, as a set (empty when absent or null)."""
    if value is None:
        return frozenset()
    items = value.list_value.values
    if not items and not value.HasField("list_value"):
        null(value)
        return frozenset()
    return frozenset(need(text(item)) for item in items)


def text(value: Value) -> str | None:
    """A string."""
    if value is not None:
        written: str = value.string_value
        if written or value.HasField("string_value"):
            return written
    null(value)
    return None


def whole(value: Value, low: int | None = None, high: int | None = None) -> int | None:
    """An integer within the bounds given."""
    if value is not None:
        number: float = value.number_value
        if number or value.HasField("number_value"):
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
def _is_label(written: str, max_length: int) -> bool:
    return len(written) <= max_length and _DNS_LABEL.fullmatch(written) is not None


@lru_cache(maxsize=4096)
def _is_subdomain(written: str) -> bool:
    return len(written) <= 253 and _DNS_SUBDOMAIN.fullmatch(written) is not None


def label(value: Value, max_length: int) -> str | None:
    """A DNS label (``^[a-z0-9]([-a-z0-9]*[a-z0-9])?$``) of at most ``max_length`` characters."""
    written = text(value)
    if written is not None and not _is_label(written, max_length):
        raise UnclearError
    return written


def subdomain(value: Value) -> str | None:
    """A DNS subdomain of at most 253 characters."""
    written = text(value)
    if written is not None and not _is_subdomain(written):
        raise UnclearError
    return written


def labels(value: Value) -> dict[str, str]:
    """A map of strings (labels, annotations)."""
    fields = obj(value)
    if fields is None:
        return {}
    return {key: need(text(item)) for key, item in fields.items()}


def ready_condition(status: Fields | None) -> Fields | None:
    """The first condition of type ``Ready``."""
    for condition in objects(status.get("conditions")) if status is not None else ():
        if need(text(condition.get("type"))) == "Ready":
            return condition
    return None


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
    if uid is None or version is None or not uid.string_value or not version.string_value:
        return None
    return uid.string_value, version.string_value


M = TypeVar("M", bound=pydantic.BaseModel)


@dataclass(frozen=True)
class Read(Generic[T]):
    """What one object reads as: a value (None: nothing to schedule with), or why it was left out."""

    value: T | None
    skipped: str | None = None
    why: str = ""  # for a skipped object: why, without its kind and name


def read_one(
    kind: str,
    struct: structpb.Struct,
    fast: Callable[[Fields], T | None] | None,
    model: type[M],
    of_model: Callable[[M], T | None],
) -> Read[T]:
    """Read an object in place with ``fast``; when a field is unclear, through its ``model`` instead."""
    # One malformed object must not stop the fleet from being scheduled: leave it out and say so.
    if fast is not None:
        try:
            return Read(fast(struct.fields))
        except UnclearError:
            pass
    item = protojson.struct_to_dict(struct)
    try:
        parsed = model.model_validate(item)
    except pydantic.ValidationError as err:
        metadata = item.get("metadata")
        name = metadata.get("name", "?") if isinstance(metadata, dict) else "?"
        first = err.errors()[0]
        why = f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}" if first["loc"] else str(first["msg"])
        return Read(None, f"{kind} {name}: {first['msg']}", why)
    return Read(of_model(parsed))
