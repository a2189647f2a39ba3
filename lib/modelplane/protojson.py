"""JSON objects in and out of protobuf Structs, fast, for objects seen again and again.

A function call converts every object it reads from a Struct and every object it
writes to one, and a control plane (or the preview's simulation) sends it the same
objects call after call: the fleet's clusters, the XR's observed resources, the
desired state of the step before. Converting a Struct field by field from Python is
slow, so each conversion is remembered by the object's wire bytes (a Struct) or its
pickle (a dict), which pin its content exactly, and handed out as a private copy.

The results are those of ``crossplane.function.resource``'s ``struct_to_dict``
(``json_format.MessageToDict``: every number a float) and ``dict_to_struct``.
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
_to_dict: OrderedDict[bytes, bytes] = OrderedDict()  # Struct wire bytes -> pickle of the dict
_to_go_dict: OrderedDict[bytes, bytes] = OrderedDict()  # the same, integral numbers as ints
_to_struct: OrderedDict[bytes, bytes] = OrderedDict()  # pickle of the dict -> Struct wire bytes


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
    # The wire bytes follow the Struct's own key order, so equal bytes give an equal dict in the same order.
    wire = s.SerializeToString()
    cache = _to_go_dict if integral else _to_dict
    found = _recall(cache, wire)
    if found is not None:
        return cast("dict[str, Any]", pickle.loads(found))  # noqa: S301 - our own bytes
    convert = _go_value if integral else _value
    out = {k: convert(x) for k, x in s.fields.items()}
    _remember(cache, wire, pickle.dumps(out, pickle.HIGHEST_PROTOCOL))
    return out


def dict_to_struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    """A Struct holding ``d`` (as ``Struct.update`` builds it)."""
    return struct_pb2.Struct.FromString(struct_wire(d))


def struct_wire(d: Mapping[str, Any]) -> bytes:
    """The wire bytes of a Struct holding ``d``: to merge into a message field, the cheapest way to fill it."""
    try:
        key = pickle.dumps(d, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        key = None
    if key is not None and (found := _recall(_to_struct, key)) is not None:
        return found
    s = struct_pb2.Struct()
    s.update(d)
    wire: bytes = s.SerializeToString()
    if key is not None:
        _remember(_to_struct, key, wire)
    return wire
