"""JSON objects in and out of protobuf Structs, fast, for objects seen again and again.

A function call converts every object it reads from a Struct and every object it
writes to one, and a control plane (or the preview's simulation) sends it the same
objects call after call: the fleet's clusters, the XR's observed resources, the
desired state of the step before. Converting a Struct field by field from Python is
slow, so each conversion is remembered by the object's wire bytes (a Struct) or its
pickle (a dict), which pin its content exactly, and handed out as a private copy.

The results are those of ``crossplane.function.resource``'s ``struct_to_dict``
(``json_format.MessageToDict``: every number a float) and ``dict_to_struct``.

An object written to a Struct in-process is often read back from one at once: the
render engine writes an XR and what it observes for a function that reads them, the
function writes what it desires for the engine that reads it. ``struct_wire(d,
read_back=...)`` then remembers, beside the Struct's bytes, the object that reading
them gives: ``d`` with its numbers as they read back (``_content`` says why its key
order is as good as the Struct's).
"""

from __future__ import annotations

import math
import pickle
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, cast

from google.protobuf import struct_pb2

__all__ = ["copy_json", "dict_to_struct", "struct_to_dict", "struct_wire"]

# Conversions remembered per direction. A 100-cluster fleet's simulation comes back to an object
# after more than 4,096 others: with that many, its conversions were forgotten before they served.
_MAX_ENTRIES = 16384
_to_dict: OrderedDict[bytes, bytes] = OrderedDict()  # Struct content (``_content``) -> pickle of the dict
_to_go_dict: OrderedDict[bytes, bytes] = OrderedDict()  # the same, integral numbers as ints
_to_struct: OrderedDict[bytes, bytes] = OrderedDict()  # pickle of the dict -> Struct wire bytes
_entries: OrderedDict[bytes, bytes] = OrderedDict()  # pickle of a (field, value) pair -> its map entry's bytes


def _remember(cache: OrderedDict[bytes, bytes], key: bytes, value: bytes) -> None:
    cache[key] = value
    if len(cache) > _MAX_ENTRIES:
        cache.popitem(last=False)


def _recall(cache: OrderedDict[bytes, bytes], key: bytes) -> bytes | None:
    found = cache.get(key)
    if found is not None:
        cache.move_to_end(key)
    return found


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
    found = _recall(cache, key)
    if found is not None:
        return cast("dict[str, Any]", pickle.loads(found))  # noqa: S301 - our own bytes
    convert = _go_value if integral else _value
    out = {k: convert(x) for k, x in s.fields.items()}
    _remember(cache, key, pickle.dumps(out, pickle.HIGHEST_PROTOCOL))
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


def struct_wire(d: Mapping[str, Any], *, read_back: bool | None = None) -> bytes:
    """The wire bytes of a Struct holding ``d``: to merge into a message field, the cheapest way to fill it.

    With ``read_back`` (False: numbers read back as floats, True: integral ones as ints, as
    ``struct_to_dict``'s ``integral``), what reading those bytes back gives is remembered too.
    """
    try:
        key = pickle.dumps(d, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        key = None
    if key is not None and (found := _recall(_to_struct, key)) is not None:
        return found
    wire = _entries_wire(d)
    if key is not None:
        _remember(_to_struct, key, wire)
        if read_back is not None:
            _remember_read_back(struct_pb2.Struct.FromString(wire), d, integral=read_back)
    return wire


def _entries_wire(d: Mapping[str, Any]) -> bytes:
    """The bytes of a Struct holding ``d``: one map entry per field, each built once per content.

    A Struct's bytes are its map entries one after another, and an object that changed
    seldom changed in every field (an XR's status moves, its spec and metadata stay).
    """
    parts = []
    for k, v in d.items():
        try:
            key: bytes | None = pickle.dumps((k, v), pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            key = None
        entry = _recall(_entries, key) if key is not None else None
        if entry is None:
            one = struct_pb2.Struct()
            one.update({k: v})
            entry = one.SerializeToString()
            if key is not None:
                _remember(_entries, key, entry)
        parts.append(entry)
    return b"".join(parts)


def _remember_read_back(s: struct_pb2.Struct, d: Mapping[str, Any], *, integral: bool) -> None:
    """Remember what ``struct_to_dict`` gives for ``s``, which ``update`` built from ``d``."""
    cache = _to_go_dict if integral else _to_dict
    key = _content(s)
    if key in cache:
        return
    try:
        read = _read_object(d, integral=integral)
    except _Unread:
        return
    _remember(cache, key, pickle.dumps(read, pickle.HIGHEST_PROTOCOL))


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
