"""Objects in and out of protobuf Structs, as Crossplane's Go code reads them back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import struct_pb2

from modelplane import protojson

__all__ = ["from_struct", "to_struct", "to_wire"]


def to_struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    """A Struct holding ``d``."""
    return protojson.dict_to_struct(d)


def to_wire(d: Mapping[str, Any], *, seldom_read: bool = False) -> bytes:
    """The wire bytes of a Struct holding ``d``, for a function that reads it back (merged into a message field).

    What the function reads back (``protojson.struct_to_dict``) is remembered with them, worked out
    only once it reads it when ``seldom_read`` (most observed composed resources are never read whole).
    """
    return protojson.struct_wire(d, read_back=False, defer=seldom_read)


def from_struct(s: struct_pb2.Struct) -> dict[str, Any]:
    """The object ``s`` holds, with integral numbers as ints (as Go reads JSON into unstructured)."""
    return protojson.struct_to_dict(s, integral=True)
