"""Objects in and out of protobuf Structs, as Crossplane's Go code reads them back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import struct_pb2

__all__ = ["from_struct", "to_struct"]


def to_struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    """A Struct holding ``d``."""
    s = struct_pb2.Struct()
    s.update(d)
    return s


def from_struct(s: struct_pb2.Struct) -> dict[str, Any]:
    """The object ``s`` holds, with integral numbers as ints (as Go reads JSON into unstructured)."""
    return {k: _from_value(v) for k, v in s.fields.items()}


def _from_value(v: struct_pb2.Value) -> Any:  # noqa: ANN401, PLR0911 - any JSON value, one return per kind
    kind = v.WhichOneof("kind")
    if kind == "struct_value":
        return from_struct(v.struct_value)
    if kind == "list_value":
        return [_from_value(x) for x in v.list_value.values]
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "number_value":
        n = v.number_value
        # Go reads the JSON of an integral double back as an int64.
        if n.is_integer() and abs(n) < 2**63:
            return int(n)
        return n
    return None
