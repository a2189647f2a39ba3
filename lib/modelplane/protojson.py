"""JSON objects in and out of protobuf Structs, fast, for objects seen again and again.

A function call converts every object it reads from a Struct and every object it
writes to one, and a control plane (or the preview's simulation) sends it the same
objects call after call: the fleet's clusters, the XR's observed resources, the
desired state of the step before. Converting a Struct field by field from Python is
slow, so each conversion is remembered by the object's wire bytes (a Struct) or its
pickle (a dict), which pin its content exactly, and handed out as a private copy.

The results are those of ``crossplane.function.resource``'s ``struct_to_dict``
(``json_format.MessageToDict``: every number a float) and ``dict_to_struct``.

A Struct's bytes are its map entries one after another, so ``struct_wire`` builds them
entry by entry, each remembered by the pickle of its field and value: an object that
changed seldom changed in every field, and a changed field whose value is a large object
is built from that object's own entries the same way. It writes every map sorted as
protobuf's deterministic serialization sorts it, so the bytes written are the content
``struct_to_dict`` keys its conversions by (``_content``).

An object written to a Struct in-process is often read back from one at once: the
render engine writes an XR and what it observes for a function that reads them, the
function writes what it desires for the engine that reads it. ``struct_wire(d,
read_back=...)`` then remembers, beside the Struct's bytes, the object that reading
them gives: ``d`` with its numbers as they read back (``_content`` says why its key
order is as good as the Struct's). For an object seldom read whole (an observed composed
resource: a function reads a field or two of it), ``defer`` remembers its pickle
instead, and the first read works it out from that.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Mapping
from typing import Any, cast

from google.protobuf import struct_pb2

__all__ = ["SIMULATION_BUDGET", "copy_json", "dict_to_struct", "remember_up_to", "struct_to_dict", "struct_wire"]


class _Memo:
    """Conversions remembered, in two generations of at most half of ``budget`` bytes each.

    What is remembered goes in the young generation; once that is full, it becomes the old one
    (the old one forgotten) and a new one starts. What is recalled from the old one moves to the
    young one: what is used again stays, as in a least-recently-used cache, without reordering
    anything on a hit. A 100-cluster fleet's simulation comes back to an object after tens of
    thousands of others: a bound by bytes, not count, keeps those and bounds what they cost.
    """

    __slots__ = ("_budget", "_held", "_old", "young")

    def __init__(self, budget: int) -> None:
        self.young: dict[bytes, bytes] = {}  # read directly on the hot paths: ``young.get(key) or recall(key)``
        self._old: dict[bytes, bytes] = {}
        self._budget = budget
        self._held = 0  # by the young generation

    def recall(self, key: bytes) -> bytes | None:
        found = self.young.get(key)
        if found is None:
            found = self._old.pop(key, None)
            if found is not None:
                self._add(key, found)
        return found

    def remember(self, key: bytes, value: bytes) -> None:
        if key not in self.young:
            self._old.pop(key, None)
            self._add(key, value)

    def replace(self, key: bytes, value: bytes) -> None:
        """Remember ``value`` for ``key``, over what was remembered for it."""
        was = self.young.pop(key, None)
        if was is not None:
            self._held -= len(key) + len(was) + _OVERHEAD
        self._old.pop(key, None)
        self._add(key, value)

    def _add(self, key: bytes, value: bytes) -> None:
        self.young[key] = value
        self._held += len(key) + len(value) + _OVERHEAD
        if self._held > self._budget // 2:
            self._old, self.young, self._held = self.young, {}, 0

    def __contains__(self, key: bytes) -> bool:
        return key in self.young or key in self._old

    def __len__(self) -> int:
        return len(self.young) + len(self._old)

    def held(self) -> int:
        """The bytes held, as counted against the budget."""
        return self._held + sum(len(k) + len(v) + _OVERHEAD for k, v in self._old.items())

    def clear(self) -> None:
        self.young.clear()
        self._old.clear()
        self._held = 0

    def grow(self, budget: int) -> None:
        """Hold up to ``budget`` bytes from now on, if that is more than now."""
        self._budget = max(self._budget, budget)


# What a remembered conversion costs beyond its bytes: two bytes objects and a dict's slot.
_OVERHEAD = 150
_MIB = 1 << 20
# A served function's calls come back to the same objects call after call: 96 MiB in all keep a
# 1,000-cluster fleet's. A preview comes back to an object after tens of thousands of others
# (``remember_up_to``): a 100-cluster fleet's holds about 130, 40, 140 and 180 MiB with no bound.
_SHARES = (4, 2, 3, 6)  # of what is remembered in all, by the caches below in order
_SERVED = 96 * _MIB
_to_dict = _Memo(_SERVED * 4 // 15)  # Struct content (``_content``) -> pickle of the dict
_to_go_dict = _Memo(_SERVED * 2 // 15)  # the same, integral numbers as ints
_to_struct = _Memo(_SERVED * 3 // 15)  # pickle of the dict -> Struct wire bytes: an object written again, unchanged
_entries = _Memo(_SERVED * 6 // 15)  # pickle of a (field, value) pair -> its map entry's bytes (``_entry``)
# What an in-process simulation of a fleet lets them hold in all (``remember_up_to``).
SIMULATION_BUDGET = 480 * _MIB


def remember_up_to(total: int) -> None:
    """Let the conversions remembered hold up to ``total`` bytes in all, shared as by default; never less than now.

    For a process that converts a whole fleet's objects over and over (the preview's simulation).
    """
    for memo, share in zip((_to_dict, _to_go_dict, _to_struct, _entries), _SHARES, strict=True):
        memo.grow(total * share // sum(_SHARES))


def copy_json(obj: Any) -> Any:  # noqa: ANN401 - any JSON value
    """A deep copy of a JSON value (dicts, lists, strings, numbers, booleans, None), faster than ``deepcopy``."""
    return pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))  # noqa: S301 - our own bytes, just made


def _value(v: struct_pb2.Value) -> Any:  # noqa: ANN401 - any JSON value, one return per kind
    kind = v.WhichOneof("kind")
    if kind == "struct_value":
        return {k: _value(x) for k, x in v.struct_value.fields.items()}
    if kind == "list_value":
        return [_value(x) for x in v.list_value.values]
    if kind == "string_value":
        return v.string_value
    if kind == "number_value":
        n = v.number_value
        if math.isinf(n) or math.isnan(n):
            msg = f"Fail to serialize {n} for Value.number_value, which would parse as string_value"
            raise ValueError(msg)
        return n
    if kind == "bool_value":
        return v.bool_value
    return None


def _go_value(v: struct_pb2.Value) -> Any:  # noqa: ANN401 - any JSON value
    kind = v.WhichOneof("kind")
    if kind == "struct_value":
        return {k: _go_value(x) for k, x in v.struct_value.fields.items()}
    if kind == "list_value":
        return [_go_value(x) for x in v.list_value.values]
    if kind == "number_value":
        n = v.number_value
        # Go reads the JSON of an integral double back as an int64.
        return int(n) if n.is_integer() and abs(n) < 2**63 else n
    return _value(v)


def struct_to_dict(s: struct_pb2.Struct, *, integral: bool = False) -> dict[str, Any]:
    """The object ``s`` holds; the caller owns the result.

    As ``json_format.MessageToDict`` gives it (every number a float), or with ``integral``
    as Crossplane's Go code reads it back (integral numbers as ints).
    """
    key = _content(s)
    cache = _to_go_dict if integral else _to_dict
    found = cache.young.get(key) or cache.recall(key)
    if found is not None and not found.startswith(_DEFERRED):
        return cast("dict[str, Any]", pickle.loads(found))  # noqa: S301 - our own bytes
    out = _read_deferred(found, integral=integral) if found is not None else None
    if out is None:
        convert = _go_value if integral else _value
        out = {k: convert(x) for k, x in s.fields.items()}
    cache.replace(key, pickle.dumps(out, pickle.HIGHEST_PROTOCOL))
    return out


def _content(s: struct_pb2.Struct) -> bytes:
    """What ``s`` holds, whatever order its maps keep their keys in: its bytes with every map sorted by key.

    A protobuf map's order is its hash table's, seeded per process, and a parse can reorder
    it: no reader of a Struct (nor Crossplane, which sends maps in Go's random order) may
    depend on it, so equal content reads as one dict, its keys in the order first read.
    """
    content: bytes = s.SerializeToString(deterministic=True)
    return content


def dict_to_struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    """A Struct holding what ``Struct.update`` would put in it from ``d``."""
    return struct_pb2.Struct.FromString(struct_wire(d))


class _Unread(Exception):  # noqa: N818 - a signal, not an error: the value reads back otherwise
    """A value whose read-back is left to the conversion (an unusual type, or no JSON number)."""


def struct_wire(d: Mapping[str, Any], *, read_back: bool | None = None, defer: bool = False) -> bytes:
    """The wire bytes of a Struct holding ``d``: to merge into a message field, the cheapest way to fill it.

    They are the Struct's content (``_content``): every map sorted by key. With ``read_back``
    (False: numbers read back as floats, True: integral ones as ints, as ``struct_to_dict``'s
    ``integral``), what reading those bytes back gives is remembered too; with ``defer``, it is
    worked out the first time they are read (for an object seldom read: most never are).
    """
    try:
        key: bytes | None = pickle.dumps(d, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        key = None
    if key is not None and (found := _to_struct.young.get(key) or _to_struct.recall(key)) is not None:
        return found  # what reading it back gives was remembered with it
    wire, whole = _fields_wire(d, _DEPTH)
    if key is not None:
        _to_struct.remember(key, wire)
        if read_back is not None and whole:
            _remember_read_back(wire, d, key, integral=read_back, defer=defer)
    return wire


# How deep a changed object is rebuilt from its fields' remembered entries (deeper, it is encoded whole), and
# the size (of its pickle) from which it is: an object that changed seldom changed in every field.
_DEPTH = 3
_SPLIT = 256


def _fields_wire(d: Mapping[str, Any], depth: int) -> tuple[bytes, bool]:
    """The bytes of a Struct holding ``d`` (its map entries, sorted by key), and whether each could be remembered.

    A Struct's bytes are its map entries one after another, each built once per content. A
    nested Struct's are too, so a changed entry whose value is an object is built from its own
    fields' entries (down to ``depth``).
    """
    parts: list[tuple[str, bytes]] = []
    whole = True  # every entry could be remembered: its key pins its content
    for k, v in d.items():
        try:
            key: bytes | None = pickle.dumps((k, v), pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            key, whole = None, False
        entry = (_entries.young.get(key) or _entries.recall(key)) if key is not None else None
        if entry is None:
            entry = _entry(k, v, depth, split=key is not None and len(key) >= _SPLIT)
            if key is not None:
                _entries.remember(key, entry)
        parts.append((k, entry))
    parts.sort(key=_order)
    return b"".join([entry for _, entry in parts]), whole


def _order(part: tuple[str, bytes]) -> bytes:
    """Where a map entry goes in ``_content``: by its key's UTF-8 bytes, a key before any it is a prefix of.

    So protobuf's deterministic serialization orders string keys (byte 0xFF is in no UTF-8 text).
    """
    return part[0].encode() + b"\xff"


def _entry(k: str, v: Any, depth: int, *, split: bool) -> bytes:  # noqa: ANN401 - any JSON value
    """The bytes of the map entry ``k: v`` of a Struct's ``fields`` (as the Struct's own, field 1)."""
    if split and depth > 0 and type(v) is dict and v and type(k) is str:
        inner, _ = _fields_wire(v, depth - 1)
        name = k.encode()
        # key (field 1) and value (field 2, a Value whose struct_value is field 5); the entry is field 1.
        value = b"\x2a" + _varint(len(inner)) + inner
        body = b"\x0a" + _varint(len(name)) + name + b"\x12" + _varint(len(value)) + value
        return b"\x0a" + _varint(len(body)) + body
    one = struct_pb2.Struct()
    one.update({k: v})
    encoded: bytes = one.SerializeToString(deterministic=True)
    return encoded


def _varint(n: int) -> bytes:
    """``n`` as a protobuf varint: seven bits a byte, the high bit says more follow."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _remember_read_back(wire: bytes, d: Mapping[str, Any], pickled: bytes, *, integral: bool, defer: bool) -> None:
    """Remember what ``struct_to_dict`` gives for the Struct of content ``wire``, which ``update`` builds from ``d``.

    ``pickled`` is ``d``'s pickle; with ``defer``, it is remembered instead, for ``struct_to_dict``
    to work out what it reads from the first time it is read.
    """
    cache = _to_go_dict if integral else _to_dict
    if wire in cache:
        return
    if defer:
        cache.remember(wire, _DEFERRED + pickled)
        return
    try:
        read = _read_object(d, integral=integral)
    except _Unread:
        return
    cache.remember(wire, pickle.dumps(read, pickle.HIGHEST_PROTOCOL))


# What a read-back remembered as its object's pickle (``_remember_read_back``) starts with: a pickle of ours
# never does, it starts with its protocol.
_DEFERRED = b"D"


def _read_deferred(remembered: bytes, *, integral: bool) -> dict[str, Any] | None:
    """What ``_remember_read_back`` deferred: the object its pickle holds, as reading its Struct back gives it.

    None when it does not read back so (the conversion says how it reads).
    """
    obj = pickle.loads(memoryview(remembered)[len(_DEFERRED) :])  # noqa: S301 - our own bytes
    try:
        return _read_object(obj, integral=integral)
    except _Unread:
        return None


def _read_object(d: Mapping[str, Any], *, integral: bool) -> dict[str, Any]:
    """``d`` as ``_value`` (or ``_go_value``) reads it back from a Struct ``update`` built from it."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        t = type(v)
        if t is dict:
            out[k] = _read_object(v, integral=integral)
        elif t is list or t is tuple:
            out[k] = _read_list(v, integral=integral)
        else:
            out[k] = _read_scalar(v, integral=integral)
    return out


def _read_list(items: list[Any] | tuple[Any, ...], *, integral: bool) -> list[Any]:
    out: list[Any] = []
    for v in items:
        t = type(v)
        if t is dict:
            out.append(_read_object(v, integral=integral))
        elif t is list or t is tuple:
            out.append(_read_list(v, integral=integral))
        else:
            out.append(_read_scalar(v, integral=integral))
    return out


def _read_scalar(v: Any, *, integral: bool) -> Any:  # noqa: ANN401 - any JSON scalar
    t = type(v)
    if v is None or t is str or t is bool:
        return v
    if t is not int and t is not float:
        raise _Unread
    n = float(v)
    if integral:
        return int(n) if n.is_integer() and abs(n) < 2**63 else n
    if math.isinf(n) or math.isnan(n):
        raise _Unread  # it does not read back: the conversion says why
    return n
