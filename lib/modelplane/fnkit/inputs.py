"""Read observed and required resources at a function's edge: never raise, say what could not be read.

Each reader conforms an input to the shape the code that uses it declares
(``modelplane.shapes``); fields that do not fit are read as absent and a
Warning result names the object and each field. The XR itself is parsed into
its generated model (``modelplane.fnkit.xr``); everything else goes through here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane import protojson
from modelplane.problems import Problem
from modelplane.shapes import Shape, conform, show

# Problems named per object in one warning; the rest are counted.
_SHOWN_PROBLEMS = 3


def report(rsp: fnv1.RunFunctionResponse, what: str, problems: tuple[Problem, ...] | list[Problem]) -> None:
    """Warn that fields of ``what`` were read as absent (once per message)."""
    if not problems:
        return
    shown = "; ".join(str(p) for p in problems[:_SHOWN_PROBLEMS])
    more = f" (and {len(problems) - _SHOWN_PROBLEMS} more)" if len(problems) > _SHOWN_PROBLEMS else ""
    message = f"{what} is malformed, read without the fields that do not fit: {shown}{more}"
    if not any(r.message == message for r in rsp.results):
        response.warning(rsp, message)


def read(
    rsp: fnv1.RunFunctionResponse,
    what: str,
    struct: structpb.Struct,
    shape: dict[str, Shape],
    problems: list[Problem] | None = None,
) -> dict[str, Any]:
    """``struct`` as a dict conformed to ``shape``, warning about what did not fit (also added to ``problems``)."""
    conformed = conform(protojson.struct_to_dict(struct), shape)
    report(rsp, what, conformed.problems)
    if problems is not None:
        problems.extend(conformed.problems)
    return conformed.value


def observed(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    key: str,
    shape: dict[str, Shape],
    problems: list[Problem] | None = None,
) -> dict[str, Any] | None:
    """The observed composed resource ``key`` conformed to ``shape``; None when it is not observed."""
    found = req.observed.resources.get(key)
    if found is None:
        return None
    return read(rsp, f"observed composed resource {key!r}", found.resource, shape, problems)


def required(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    name: str,
    shape: dict[str, Shape],
    keep: Callable[[structpb.Struct], bool] | None = None,
) -> Iterator[dict[str, Any]]:
    """The required resources answered under ``name``, each conformed to ``shape`` (none when not fetched).

    ``keep``, when given, is asked first of each resource as it came (reading a few fields in
    place): those it refuses are neither converted nor checked, so a list of many costs what the
    few kept cost.
    """
    found = req.required_resources.get(name)
    for index, item in enumerate(found.items if found is not None else ()):
        if keep is not None and not keep(item.resource):
            continue
        yield read(rsp, f"required resource {_identity(item.resource, name, index)}", item.resource, shape)


def labels_at(struct: structpb.Struct) -> dict[str, str] | None:
    """``metadata.labels`` of ``struct`` read in place: {} when absent, None when not a map of strings."""
    meta = struct.fields.get("metadata")
    if meta is None or _null(meta):
        return {}
    if not meta.HasField("struct_value"):
        return None
    labels = meta.struct_value.fields.get("labels")
    if labels is None or _null(labels):
        return {}
    if not labels.HasField("struct_value"):
        return None
    out: dict[str, str] = {}
    for key, value in labels.struct_value.fields.items():
        if not value.HasField("string_value"):
            return None
        out[key] = value.string_value
    return out


def string_at(struct: structpb.Struct, *path: str) -> str:
    """The string at ``path`` in ``struct``, read in place; empty where the path is missing or not a string."""
    value: structpb.Value | None = None
    fields: Mapping[str, structpb.Value] = struct.fields
    for key in path:
        value = fields.get(key)
        if value is None:
            return ""
        fields = value.struct_value.fields if value.HasField("struct_value") else {}
    return _string_value(value)


def _identity(struct: structpb.Struct, name: str, index: int) -> str:
    kind = _string(struct, "kind")
    meta = struct.fields.get("metadata")
    fields = meta.struct_value.fields if meta is not None and meta.HasField("struct_value") else {}
    parts = [_string_value(fields.get("namespace")), _string_value(fields.get("name"))]
    named = "/".join(p for p in parts if p)
    return f"{kind or 'object'} {named}" if named else f"{name}[{index}]"


def _string(struct: structpb.Struct, key: str) -> str:
    return _string_value(struct.fields.get(key))


def _string_value(value: structpb.Value | None) -> str:
    return value.string_value if value is not None and value.HasField("string_value") else ""


def condition(
    found: fnv1.Resource | structpb.Struct | None, typ: str, problems: list[Problem] | None = None
) -> resource.Condition:
    """Condition ``typ`` of a resource, as ``resource.get_condition`` reads it but for any shape.

    The SDK's reader assumes ``status.conditions`` is a list of objects with string fields and
    raises on anything else; this one reads what fits (Unknown when nothing does) and adds
    what does not to ``problems``.
    """
    struct = found.resource if isinstance(found, fnv1.Resource) else found
    unknown = resource.Condition(typ=typ, status="Unknown")
    out = problems if problems is not None else []
    status = struct.fields.get("status") if struct is not None else None
    if status is None or _null(status):
        return unknown
    if not status.HasField("struct_value"):
        out.append(Problem("status", f"expected an object, got {_kind(status)}"))
        return unknown
    entries = status.struct_value.fields.get("conditions")
    if entries is None or _null(entries):
        return unknown
    if not entries.HasField("list_value"):
        out.append(Problem("status.conditions", f"expected a list, got {_kind(entries)}"))
        return unknown
    for index, entry in enumerate(entries.list_value.values):
        where = f"status.conditions[{index}]"
        if not entry.HasField("struct_value"):
            out.append(Problem(where, f"expected an object, got {_kind(entry)}"))
            continue
        fields: Mapping[str, structpb.Value] = entry.struct_value.fields
        for key in ("type", "status", "reason", "message"):
            value = fields.get(key)
            if value is not None and not _null(value) and not value.HasField("string_value"):
                out.append(Problem(f"{where}.{key}", f"expected a string, got {_kind(value)}"))
        if _string_value(fields.get("type")) == typ:
            return resource.Condition(
                typ=typ,
                status=_string_value(fields.get("status")) or "Unknown",
                reason=_string_value(fields.get("reason")) or None,
                message=_string_value(fields.get("message")) or None,
            )
    return unknown


def _null(value: structpb.Value) -> bool:
    return value.WhichOneof("kind") in (None, "null_value")


def _kind(value: structpb.Value) -> str:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return show(value.string_value)
    if kind == "number_value":
        return show(value.number_value)
    if kind == "bool_value":
        return show(value.bool_value)
    return "a list" if kind == "list_value" else "an object"


def observed_condition(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, key: str, typ: str = "Ready"
) -> resource.Condition:
    """Condition ``typ`` of the observed composed resource ``key``, warning when its conditions are malformed."""
    problems: list[Problem] = []
    found = condition(req.observed.resources.get(key), typ, problems)
    report(rsp, f"observed composed resource {key!r}", problems)
    return found


def is_ready(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, key: str, typ: str = "Ready") -> bool:
    """Whether the observed composed resource ``key`` reports condition ``typ`` True."""
    return observed_condition(req, rsp, key, typ).status == "True"
