"""Objects in and out of protobuf Structs, as Crossplane's Go code reads them back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import struct_pb2

from modelplane import protojson

__all__ = ["from_struct", "to_struct"]


def to_struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    """A Struct holding ``d``."""
    return protojson.dict_to_struct(d)


def from_struct(s: struct_pb2.Struct) -> dict[str, Any]:
    """The object ``s`` holds, with integral numbers as ints (as Go reads JSON into unstructured)."""
    return protojson.struct_to_dict(s, integral=True)
