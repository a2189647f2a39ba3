"""Kubernetes structural schemas as JSON Schema, and schema failures worded as the API server words them."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping, Sequence

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not in the dev extras

from modelplane.admission.documents import JSON, Schema

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")

_PASSTHROUGH = (
    "enum",
    "minimum",
    "maximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "format",
)


def to_json_schema(node: Schema, *, strict: bool = True, in_junctor: bool = False) -> Schema:  # noqa: PLR0912 - one branch per keyword
    """Convert one Kubernetes structural schema node to JSON Schema (draft 2020-12).

    With ``strict``, objects refuse fields their schema does not declare (what
    ``kubectl apply`` does with strict field validation, its default) unless
    they preserve unknown fields. Nodes inside ``allOf``/``anyOf``/``oneOf``/
    ``not`` only constrain; they never refuse fields on their own.
    """
    out: Schema = {}
    int_or_string = bool(node.get("x-kubernetes-int-or-string"))
    preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
    types: list[str] = []
    if int_or_string:
        types = ["integer", "string"]
    elif "type" in node:
        types = [node["type"]]
    if types and node.get("nullable"):
        types.append("null")
    if types:
        out["type"] = types if len(types) > 1 else types[0]
    for key in _PASSTHROUGH:
        if key in node:
            out[key] = copy.deepcopy(node[key])
    if "enum" in out and node.get("nullable"):
        out["enum"] = [*out["enum"], None]
    if node.get("exclusiveMinimum") is True and "minimum" in node:
        out["exclusiveMinimum"] = out.pop("minimum")
    if node.get("exclusiveMaximum") is True and "maximum" in node:
        out["exclusiveMaximum"] = out.pop("maximum")
    for junctor in ("allOf", "anyOf", "oneOf"):
        if junctor in node:
            out[junctor] = [to_json_schema(n, strict=strict, in_junctor=True) for n in node[junctor]]
    if "not" in node:
        out["not"] = to_json_schema(node["not"], strict=strict, in_junctor=True)
    if "properties" in node:
        out["properties"] = {
            k: to_json_schema(v, strict=strict, in_junctor=in_junctor) for k, v in node["properties"].items()
        }
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):
        out["additionalProperties"] = to_json_schema(additional, strict=strict, in_junctor=in_junctor)
    elif strict and not in_junctor and not preserve and additional is not True and node.get("type") == "object":
        allowed = set(node.get("properties", {}))
        if node.get("x-kubernetes-embedded-resource"):
            allowed |= {"apiVersion", "kind", "metadata"}
        out["properties"] = out.get("properties", {})
        for name in allowed - set(out["properties"]):
            out["properties"][name] = {}
        out["additionalProperties"] = False
    if isinstance(node.get("items"), dict):
        out["items"] = to_json_schema(node["items"], strict=strict, in_junctor=in_junctor)
    return out


def _check_date_time(value: object) -> bool:
    return not isinstance(value, str) or _RFC3339.match(value) is not None


def _check_int32(value: object) -> bool:
    return not isinstance(value, int) or -(2**31) <= value < 2**31


def _check_int64(value: object) -> bool:
    return not isinstance(value, int) or -(2**63) <= value < 2**63


FORMATS = jsonschema.FormatChecker(formats=())
FORMATS.checks("date-time")(_check_date_time)
FORMATS.checks("int32")(_check_int32)
FORMATS.checks("int64")(_check_int64)


def fmt_path(parts: Iterator[str | int] | list[str | int] | tuple[str | int, ...]) -> str:
    """A field path as the API server prints it: ``spec.pools[0].name``; the root is ``<root>``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif out == "":
            out = p
        else:
            out += f".{p}"
    return out or "<root>"


def type_name(value: JSON) -> str:  # noqa: PLR0911 - one return per JSON type
    """The JSON type of ``value``."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def short(value: JSON) -> str:
    """``value`` as the API server quotes it in a message (objects and lists by their type)."""
    if isinstance(value, (dict, list)):
        return f'"{type_name(value)}"'
    return json.dumps(value)


# Schema failures the API server treats as blocking: it then skips CEL rules
# (apiextensions-apiserver hasBlockingErr: NotSupported, Required, TooLong,
# TooMany, TypeInvalid).
BLOCKING_VALIDATORS = frozenset({"enum", "required", "maxLength", "maxItems", "maxProperties", "type"})
RULES_NOT_CHECKED = (
    "<root>: Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def schema_error_messages(error: jsonschema.ValidationError) -> list[str]:  # noqa: PLR0911 - one return per keyword
    """Render a jsonschema error the way the API server words the same failure."""
    path = list(error.absolute_path)
    where = fmt_path(path)
    v = error.validator
    val = error.validator_value
    inst = error.instance
    messages: dict[str, str] = {
        "enum": f"{where}: Unsupported value: {short(inst)}: supported values: "
        + ", ".join(json.dumps(x) for x in (val if isinstance(val, list) else [])),
        "minimum": f"{where}: Invalid value: {inst}: {where} in body should be greater than or equal to {val}",
        "maximum": f"{where}: Invalid value: {inst}: {where} in body should be less than or equal to {val}",
        "exclusiveMinimum": f"{where}: Invalid value: {inst}: {where} in body should be greater than {val}",
        "exclusiveMaximum": f"{where}: Invalid value: {inst}: {where} in body should be less than {val}",
        "pattern": f"{where}: Invalid value: {short(inst)}: {where} in body should match '{val}'",
        "maxLength": f"{where}: Too long: may not be more than {val} bytes",
        "minLength": f"{where}: Invalid value: {short(inst)}: {where} in body should be at least {val} chars long",
        "format": f"{where}: Invalid value: {short(inst)}: {where} in body must be of type {val}: {short(inst)}",
    }
    if v == "required":
        missing = [name for name in val if isinstance(inst, dict) and name not in inst]
        return [f"{fmt_path([*path, name])}: Required value" for name in missing]
    if v == "additionalProperties":
        declared = set(error.schema.get("properties", {}))
        extra = sorted(k for k in inst if k not in declared) if isinstance(inst, dict) else []
        return [f'{fmt_path([*path, k])}: unknown field "{fmt_path([*path, k])}"' for k in extra]
    if v == "type":
        want = " or ".join(val) if isinstance(val, list) else val
        return [f"{where}: Invalid value: {short(inst)}: {where} in body must be of type {want}: {short(inst)}"]
    if v in ("maxItems", "maxProperties"):
        return [f"{where}: Too many: {len(inst)}: must have at most {val} items"]
    if v == "minItems":
        return [f"{where}: Invalid value: {len(inst)}: {where} in body should have at least {val} items"]
    if v == "minProperties":
        return [f"{where}: Invalid value: {len(inst)}: {where} in body should have at least {val} properties"]
    return [messages.get(str(v), f"{where}: {error.message}")]


def fields_at(schema: Schema, path: Sequence[str | int], definitions: Mapping[str, Schema] | None = None) -> list[str]:
    """The property names the schema declares for the object at ``path`` (``$ref``s resolved in ``definitions``).

    A list index steps into ``items``, a name into ``properties`` or ``additionalProperties``.
    """
    node: Schema | None = schema
    for part in [*path, None]:
        while node is not None and "$ref" in node and definitions is not None:
            node = definitions.get(str(node["$ref"]).rsplit("/", 1)[-1])
        if node is None or part is None:
            break
        if isinstance(part, int):
            node = node.get("items") if isinstance(node.get("items"), dict) else None
        elif part in node.get("properties", {}):
            node = node["properties"][part]
        else:
            additional = node.get("additionalProperties")
            node = additional if isinstance(additional, dict) else None
    return sorted(node.get("properties", {})) if node is not None else []
