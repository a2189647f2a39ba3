"""Objects in and out of Structs: what is remembered reads back exactly as a conversion of the Struct would.

An object written with ``struct_wire(..., read_back=...)`` is read back from memory, not
converted: numbers must come back as the conversion gives them (every one a float, or
integral ones as ints), lists for tuples, and an object no conversion reads must still fail.
"""

from __future__ import annotations

import copy
import json
import random
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
        "keys that prefix others",
        {"metadata": {"name": "n", "namespace": "ns", "nam": 1, "": 2, "names": {"a": 1, "ab": 2, "b": 3}}},
    ),
    ("keys beyond ASCII", {"é": 1, "e": {"\u00ff": 2, "z": 3, "\U0001f600": 4, "\uffff": 5}}),
    (
        "objects large enough to be built from their fields",
        {
            "spec": {
                "forProvider": {"manifest": {"metadata": {"name": "x" * 300, "labels": {"a": "1"}}, "data": {}}},
                "list": [{"k": "v" * 300}],
                "empty": {},
            },
            "status": {"conditions": [{"type": "Ready", "message": "m" * 400}], "n": 2**53 + 1},
        },
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


@pytest.fixture(autouse=True)
def _forget() -> None:
    """Each test starts with nothing remembered."""
    for memo in (protojson._to_struct, protojson._entries, protojson._to_dict, protojson._to_go_dict):
        memo.clear()


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
    wire = protojson.struct_wire({"x": float("inf")}, read_back=False)
    with pytest.raises(ValueError, match="Fail to serialize inf"):
        protojson.struct_to_dict(struct_pb2.Struct.FromString(wire))


@pytest.mark.parametrize("obj", [o for _, o in OBJECTS], ids=[name for name, _ in OBJECTS])
def test_an_object_written_for_one_reader_reads_for_the_other_as_its_struct_converts(obj: dict[str, Any]) -> None:
    protojson._to_dict.clear()
    protojson._to_go_dict.clear()
    wire = protojson.struct_wire(obj, read_back=False)
    for integral in (True, False):
        read = protojson.struct_to_dict(struct_pb2.Struct.FromString(wire), integral=integral)
        assert _typed(read) == _typed(_converted(wire, integral=integral))


def test_a_written_object_is_remembered_for_the_reader_named() -> None:
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
    assert protojson.dict_to_struct(obj) == updated  # remembered whole


@pytest.mark.parametrize("obj", [o for _, o in OBJECTS], ids=[name for name, _ in OBJECTS])
def test_the_wire_of_an_object_is_its_structs_content(obj: dict[str, Any]) -> None:
    """Written bytes key what reading them gives: they are what ``_content`` makes of their Struct."""
    updated = struct_pb2.Struct()
    updated.update(obj)
    for _ in range(2):  # built, then from the entries remembered
        protojson._to_struct.clear()
        wire = protojson.struct_wire(obj)
        assert wire == updated.SerializeToString(deterministic=True)
        assert protojson._content(struct_pb2.Struct.FromString(wire)) == wire
    changed = {**obj, "extra": {"name": "y" * 300, "more": obj}}
    updated.update({"extra": changed["extra"]})
    assert protojson.struct_wire(changed) == updated.SerializeToString(deterministic=True)


def test_an_object_that_does_not_convert_fails_as_update_does() -> None:
    bads: list[Any] = [{"x": object()}, {1: "one"}, {"x": {"y": {2: "two"}, "pad": "p" * 300}}]
    for bad in bads:
        with pytest.raises((TypeError, ValueError, AttributeError)):
            struct_pb2.Struct().update(bad)
        with pytest.raises((TypeError, ValueError, AttributeError)):
            protojson.struct_wire(bad)


def test_what_is_remembered_is_bounded_by_its_bytes() -> None:
    memo = protojson._Memo(3 * (protojson._OVERHEAD + 20))
    for n in range(5):
        memo.remember(b"key%d" % n, b"v" * 16)
    assert len(memo) == 3
    assert memo.held() <= 3 * (protojson._OVERHEAD + 20)
    assert memo.recall(b"key0") is None
    assert memo.recall(b"key4") == b"v" * 16
    memo.recall(b"key2")  # used: kept over key3
    memo.remember(b"key5", b"v" * 16)
    assert b"key2" in memo
    assert b"key3" not in memo


def test_a_simulation_lets_more_be_remembered_and_never_less() -> None:
    memo = protojson._Memo(3 * (protojson._OVERHEAD + 20))
    memo.grow(6 * (protojson._OVERHEAD + 20))
    for n in range(5):
        memo.remember(b"key%d" % n, b"v" * 16)
    assert len(memo) == 5
    memo.grow(protojson._OVERHEAD)  # less than it holds: no change
    memo.remember(b"key5", b"v" * 16)
    assert len(memo) == 6


@pytest.mark.parametrize("total", [protojson.SIMULATION_BUDGET, 2 * protojson.SIMULATION_BUDGET], ids=["sim", "twice"])
def test_remember_up_to_shares_the_total_among_the_caches(total: int) -> None:
    memos = (protojson._to_dict, protojson._to_go_dict, protojson._to_struct, protojson._entries)
    before = [m._budget for m in memos]
    try:
        protojson.remember_up_to(total)
        after = [m._budget for m in memos]
        assert all(a >= b for a, b in zip(after, before, strict=True))
        assert sum(after) >= total - len(memos)
        assert max(after) == after[-1]  # the field entries, reused most, get the largest share
    finally:
        for m, b in zip(memos, before, strict=True):
            m._budget = b


def test_a_handed_out_object_is_the_callers_to_change() -> None:
    obj: dict[str, Any] = {"spec": {"list": [1, {"a": "b" * 300}]}}
    wire = protojson.struct_wire(obj, read_back=True)
    first = protojson.struct_to_dict(struct_pb2.Struct.FromString(wire), integral=True)
    first["spec"]["list"].append("changed")
    again = protojson.struct_to_dict(struct_pb2.Struct.FromString(wire), integral=True)
    assert again == {"spec": {"list": [1, {"a": "b" * 300}]}}
    obj["spec"]["list"][1]["a"] = "c"
    assert protojson.struct_to_dict(struct_pb2.Struct.FromString(wire), integral=True) == again


def _random_value(rng: random.Random, depth: int) -> Any:
    pick = rng.randrange(10 if depth < 4 else 7)
    if pick == 0:
        return rng.choice(["", "text", "é", "name", "namespace"])
    if pick == 1:
        return rng.choice([None, True, False])
    if pick == 2:
        return rng.choice([0, 1, -7, 2**53, 2**53 + 1, -(2**53) - 1, 2**63 - 1, 2**63, 2**64 + 3, -(2**63)])
    if pick == 3:
        return rng.choice([0.0, -0.0, 0.5, 4.0, 1e300, -2.5e-7, 9.2233720368547758e18, float(2**63)])
    if pick in (4, 5, 6):
        return rng.choice(["a", "b", 3])
    if pick in (7, 8):
        return {rng.choice(["a", "ab", "b", "ba", "x" * 40]): _random_value(rng, depth + 1) for _ in range(4)}
    items = [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return tuple(items) if rng.random() < 0.3 else items


@pytest.mark.parametrize("seed", range(40))
def test_random_objects_read_back_as_their_structs_convert(seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311 - a fixed sequence of cases, no secret
    obj = {f"k{n}": _random_value(rng, 0) for n in range(6)}
    obj["big"] = {"pad": "p" * 300, "inner": _random_value(rng, 1)}  # built from its fields' entries
    for integral in (False, True):
        protojson._to_dict.clear()
        protojson._to_go_dict.clear()
        wire = protojson.struct_wire(obj, read_back=integral)
        updated = struct_pb2.Struct()
        updated.update(obj)
        assert wire == updated.SerializeToString(deterministic=True)
        remembered = protojson.struct_to_dict(struct_pb2.Struct.FromString(wire), integral=integral)
        assert _typed(remembered) == _typed(_converted(wire, integral=integral))


@pytest.mark.parametrize("integral", [False, True], ids=["floats", "integral"])
@pytest.mark.parametrize("obj", [o for _, o in OBJECTS], ids=[name for name, _ in OBJECTS])
def test_a_read_back_deferred_reads_as_its_struct_converts_and_is_the_callers(
    obj: dict[str, Any], *, integral: bool
) -> None:
    source = copy.deepcopy(obj)
    wire = protojson.struct_wire(source, read_back=integral, defer=True)
    _change_everywhere(source)  # after writing: what is read back is what was written
    first = protojson.struct_to_dict(struct_pb2.Struct.FromString(wire), integral=integral)
    want = _typed(_converted(protojson.struct_wire(obj), integral=integral))
    assert _typed(first) == want
    _change_everywhere(first)  # the caller's to change
    again = protojson.struct_to_dict(struct_pb2.Struct.FromString(wire), integral=integral)
    assert _typed(again) == want


def _change_everywhere(value: Any) -> None:
    """Change every object and list inside ``value`` in place."""
    if isinstance(value, dict):
        for v in value.values():
            _change_everywhere(v)
        value["changed"] = True
    elif isinstance(value, list):
        for v in value:
            _change_everywhere(v)
        value.append("changed")


class _Text(str):
    """A string of another type: ``update`` writes it, but no conversion reads it back as such."""


@pytest.mark.parametrize(
    ("obj", "fails"),
    [
        pytest.param({"x": float("inf")}, True, id="no JSON number"),
        pytest.param({"x": _Text("t"), "n": 1}, False, id="a string of another type"),
        pytest.param({"x": ("a", 2)}, False, id="a tuple"),
    ],
)
def test_a_deferred_read_back_of_what_does_not_read_back_as_written_is_converted(
    obj: dict[str, Any], *, fails: bool
) -> None:
    wire = protojson.struct_wire(obj, read_back=False, defer=True)
    struct = struct_pb2.Struct.FromString(wire)
    if fails:
        with pytest.raises(ValueError, match="Fail to serialize"):
            protojson.struct_to_dict(struct)
        return
    read = protojson.struct_to_dict(struct)
    assert _typed(read) == _typed(_converted(wire, integral=False))
    assert all(type(v) is not _Text for v in read.values())


# Objects a little different from each other: each is given its own wire and read-back, whichever came first.
NEIGHBOURS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("a value moved to the next field", {"a": "bc", "d": "e"}, {"a": "b", "cd": "e"}),
    ("fields swapped", {"a": 1, "b": 2}, {"b": 1, "a": 2}),
    ("one field or two", {"a": {"b": 1, "c": 2}}, {"a": {"b": 1}, "c": 2}),
    ("an int or a float", {"a": 1, "b": [1]}, {"a": 1.0, "b": [1]}),
    ("a list or a tuple", {"a": [1, "x"]}, {"a": (1, "x")}),
    ("a nested change", {"spec": {"big": "p" * 300, "n": 1}}, {"spec": {"big": "p" * 300, "n": 2}}),
    ("a field added", {"a": 1}, {"a": 1, "b": None}),
    ("a field dropped", {"a": 1, "b": None}, {"a": 1}),
]


@pytest.mark.parametrize(("one", "other"), [(a, b) for _, a, b in NEIGHBOURS], ids=[n for n, _, _ in NEIGHBOURS])
def test_a_changed_object_is_never_given_the_wire_or_read_back_of_another(
    one: dict[str, Any], other: dict[str, Any]
) -> None:
    for obj in (one, other, one, other):  # each one written, then remembered
        wire = protojson.struct_wire(obj, read_back=False, defer=obj is other)
        updated = struct_pb2.Struct()
        updated.update(obj)
        assert wire == updated.SerializeToString(deterministic=True)
        read = protojson.struct_to_dict(struct_pb2.Struct.FromString(wire))
        assert _typed(read) == _typed(_converted(wire, integral=False))
        protojson._to_dict.clear()


@pytest.mark.parametrize("times", [1, 2, 50], ids=["once", "twice", "many"])
def test_what_is_remembered_anew_for_a_key_stays_within_the_bound(times: int) -> None:
    budget = 4 * (protojson._OVERHEAD + 40)
    memo = protojson._Memo(budget)
    memo.remember(b"other", b"o" * 16)
    for n in range(times):
        memo.replace(b"key", b"%d" % n * 8)
        assert memo.held() <= budget
        assert memo.recall(b"key") == b"%d" % n * 8
    assert len(memo) <= 2
