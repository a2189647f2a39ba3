"""Objects in and out of Structs: what is remembered reads back exactly as a conversion of the Struct would.

An object written with ``struct_wire(..., read_back=...)`` is read back from memory, not
converted: numbers must come back as the conversion gives them (every one a float, or
integral ones as ints), lists for tuples, and an object no conversion reads must still fail.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import struct_pb2

from modelplane import protojson

OBJECTS: list[tuple[str, dict[str, Any]]] = [
    ("numbers", {"spec": {"replicas": 3, "ratio": 0.5, "big": 2**60, "huge": 2**70, "whole": 4.0, "neg": -2}}),
    ("scalars", {"a": "text", "b": True, "c": False, "d": None, "e": ""}),
    (
        "nested lists",
        {"items": [[1, 2.5], {"x": [True, None, {"y": 7}]}, (3, "t")], "empty": [], "none": {}},
    ),
    (
        "manifest",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "m", "labels": {"z": "1", "a": "2"}, "annotations": {}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "ports": [{"port": 80}]}]}}},
        },
    ),
]


def _typed(value: Any) -> str:
    """``value`` with its number types told apart (1 and 1.0 print differently), keys in any order."""
    return json.dumps(value, sort_keys=True)


def _converted(wire: bytes, *, integral: bool) -> dict[str, Any]:
    """What converting the Struct of ``wire`` field by field gives (nothing remembered)."""
    protojson._to_dict.clear()
    protojson._to_go_dict.clear()
    return protojson.struct_to_dict(struct_pb2.Struct.FromString(wire), integral=integral)


@pytest.mark.parametrize("integral", [False, True], ids=["floats", "integral"])
@pytest.mark.parametrize("obj", [o for _, o in OBJECTS], ids=[name for name, _ in OBJECTS])
def test_a_written_object_reads_back_as_its_struct_converts(obj: dict[str, Any], *, integral: bool) -> None:
    protojson._to_struct.clear()
    wire = protojson.struct_wire(obj, read_back=integral)
    remembered = protojson.struct_to_dict(struct_pb2.Struct.FromString(wire), integral=integral)
    assert _typed(remembered) == _typed(_converted(wire, integral=integral))


def test_a_struct_whose_maps_are_reordered_reads_as_the_same_object() -> None:
    obj = {k: {"n": i, "list": [{"k": k}]} for i, k in enumerate("abcdefghijklmnopqrstuvwxyz")}
    wire = protojson.struct_wire(obj, read_back=False)
    once = struct_pb2.Struct.FromString(wire)
    twice = struct_pb2.Struct.FromString(once.SerializeToString())
    assert _typed(protojson.struct_to_dict(twice)) == _typed(protojson.struct_to_dict(once))
    assert _typed(protojson.struct_to_dict(twice)) == _typed(_converted(wire, integral=False))


def test_a_number_that_is_no_json_number_still_fails_to_read_back() -> None:
    protojson._to_struct.clear()
    wire = protojson.struct_wire({"x": float("inf")}, read_back=False)
    with pytest.raises(ValueError, match="Fail to serialize inf"):
        protojson.struct_to_dict(struct_pb2.Struct.FromString(wire))


def test_a_written_object_is_remembered_for_the_reader_named() -> None:
    protojson._to_struct.clear()
    protojson._to_dict.clear()
    protojson._to_go_dict.clear()
    protojson.struct_wire({"n": 1}, read_back=True)
    assert len(protojson._to_go_dict) == 1
    assert len(protojson._to_dict) == 0


@pytest.mark.parametrize("obj", [o for _, o in OBJECTS], ids=[name for name, _ in OBJECTS])
def test_a_struct_built_field_by_field_holds_what_update_puts_in_it(obj: dict[str, Any]) -> None:
    updated = struct_pb2.Struct()
    updated.update(obj)
    for _ in range(2):  # built, then from the fields remembered
        protojson._to_struct.clear()
        assert protojson.dict_to_struct(obj) == updated
