"""Validate manifests the way the API server would after Crossplane installs our XRDs.

This is a test helper, not a test. It:

- loads every ``apis/*/definition.yaml`` and derives the CRD schema Crossplane
  generates for it (``apiVersion``/``kind``/``metadata``, ``spec.crossplane``,
  ``status.conditions``, ``status.crossplane``);
- applies structural defaults like the API server;
- validates with jsonschema (OpenAPI v3 converted to JSON Schema, unknown
  fields refused as ``kubectl apply`` does with strict field validation);
- evaluates every ``x-kubernetes-validations`` rule with cel-python at its
  node, with ``self`` bound to the node's value;
- finds the schema of any other kind in the shared CRDs, or for built-in kinds
  in the Kubernetes OpenAPI document.

Set ``MODELPLANE_CRDS`` to use a CRD directory other than ``../shared/crds`` beside the repository.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import celpy
import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not in the dev extras
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from modelplane import kinds

REPO = Path(__file__).resolve().parents[2]
APIS_DIR = REPO / "apis"
EXAMPLES_DIR = REPO / "examples"
CEL_CASES_DIR = Path(__file__).resolve().parent / "cel_cases"
CRDS_DIR = Path(os.environ.get("MODELPLANE_CRDS") or REPO.parent / "shared" / "crds")
XRD_CRD = CRDS_DIR / "crossplane" / "crds" / "apiextensions.crossplane.io_compositeresourcedefinitions.yaml"
COMPOSITION_CRD = CRDS_DIR / "crossplane" / "crds" / "apiextensions.crossplane.io_compositions.yaml"
KUBERNETES_OPENAPI = CRDS_DIR / "kubernetes-openapi" / "swagger.json.unprocessed"

JSON = Any
Schema = dict[str, Any]

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Crossplane truncates XR names used as label values (internal/xcrd/crd.go).
_MAX_COMPOSITE_NAME_LENGTH = 63

# Functions and macros of standard CEL that Kubernetes' CEL environment and
# cel-python 0.5.0 both provide. A rule calling anything else either does not
# compile on the API server or cannot be evaluated here.
PORTABLE_CEL_FUNCTIONS = frozenset(
    {
        "has",
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
        "size",
        "matches",
        "startsWith",
        "endsWith",
        "contains",
        "int",
        "uint",
        "double",
        "string",
        "bool",
        "type",
        "duration",
        "timestamp",
    }
)

_MAX_DNS1123_SUBDOMAIN = 253
_MAX_DNS1123_LABEL = 63
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


# --------------------------------------------------------------------------
# Loading


def load_documents(path: Path) -> list[JSON]:
    """Return the non-empty YAML documents of ``path``."""
    with path.open(encoding="utf-8") as f:
        return [d for d in yaml.load_all(f, Loader=_LOADER) if d is not None]


def load_document(path: Path) -> JSON:
    """Return the only YAML document of ``path``."""
    docs = load_documents(path)
    if len(docs) != 1:
        msg = f"{path}: want exactly one YAML document, got {len(docs)}"
        raise ValueError(msg)
    return docs[0]


@dataclass(frozen=True)
class Definition:
    """One of our XRDs as found in ``apis/<plural>/definition.yaml``."""

    kind: str
    path: Path
    xrd: JSON

    @property
    def scope(self) -> str:
        return str(self.xrd["spec"].get("scope", "Namespaced"))

    @property
    def version(self) -> JSON:
        """The referenceable version (the one Crossplane composes)."""
        versions = [v for v in self.xrd["spec"]["versions"] if v.get("referenceable")]
        if len(versions) != 1:
            msg = f"{self.path}: want exactly one referenceable version, got {len(versions)}"
            raise ValueError(msg)
        return versions[0]

    @property
    def schema(self) -> Schema:
        """The openAPIV3Schema as written in the XRD."""
        return dict(self.version["schema"]["openAPIV3Schema"])

    @property
    def crd_schema(self) -> Schema:
        """The openAPIV3Schema of the CRD Crossplane generates from the XRD."""
        return xr_crd_schema(self.xrd)


def definition_paths() -> list[Path]:
    """Every XRD file in the repository, sorted."""
    return sorted(APIS_DIR.glob("*/definition.yaml"))


@functools.cache
def definitions() -> dict[str, Definition]:
    """Our XRDs by kind."""
    out: dict[str, Definition] = {}
    for path in definition_paths():
        xrd = load_document(path)
        kind = xrd["spec"]["names"]["kind"]
        out[kind] = Definition(kind=kind, path=path, xrd=xrd)
    return out


# --------------------------------------------------------------------------
# The CRD schema Crossplane generates for an XR (internal/xcrd in crossplane v2)


def _crossplane_spec_props(scope: str, default_update_policy: str | None) -> Schema:
    match_labels: Schema = {"type": "object", "additionalProperties": {"type": "string"}}
    ref: Schema = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    selector: Schema = {
        "type": "object",
        "required": ["matchLabels"],
        "properties": {"matchLabels": match_labels},
    }
    resource_ref_props: Schema = {
        "apiVersion": {"type": "string"},
        "name": {"type": "string"},
        "kind": {"type": "string"},
    }
    if scope != "Namespaced":
        resource_ref_props["namespace"] = {"type": "string"}
    update_policy: Schema = {"type": "string", "enum": ["Automatic", "Manual"]}
    if default_update_policy is not None:
        update_policy["default"] = default_update_policy
    props: Schema = {
        "compositionRef": copy.deepcopy(ref),
        "compositionSelector": copy.deepcopy(selector),
        "compositionRevisionRef": copy.deepcopy(ref),
        "compositionRevisionSelector": copy.deepcopy(selector),
        "compositionUpdatePolicy": update_policy,
        "resourceRefs": {
            "type": "array",
            "x-kubernetes-list-type": "atomic",
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind"],
                "properties": resource_ref_props,
            },
        },
    }
    return {
        "crossplane": {
            "type": "object",
            "description": "Configures how Crossplane will reconcile this composite resource",
            "properties": props,
        }
    }


def _crossplane_status_props() -> Schema:
    return {
        "conditions": {
            "description": "Conditions of the resource.",
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": {
                "type": "object",
                "required": ["lastTransitionTime", "reason", "status", "type"],
                "properties": {
                    "lastTransitionTime": {"type": "string", "format": "date-time"},
                    "message": {"type": "string"},
                    "reason": {"type": "string"},
                    "status": {"type": "string"},
                    "type": {"type": "string"},
                    "observedGeneration": {"type": "integer", "format": "int64"},
                },
            },
        },
        "crossplane": {
            "type": "object",
            "description": "Indicates how Crossplane is reconciling this composite resource",
            "properties": {
                "connectionDetails": {
                    "type": "object",
                    "properties": {"lastPublishedTime": {"type": "string", "format": "date-time"}},
                }
            },
        },
    }


def xr_crd_schema(xrd: JSON) -> Schema:
    """Return the openAPIV3Schema Crossplane v2 generates for an XRD's referenceable version.

    Mirrors ``genCrdVersion`` and ``ForCompositeResource``: only ``spec`` and
    ``status`` of the XRD's schema survive (with their required fields, CEL
    rules, oneOf and preserve-unknown-fields); ``metadata.name`` is capped at 63
    characters; Crossplane's own ``spec.crossplane`` and ``status`` fields are
    merged in, overriding anything of the same name.
    """
    spec = xrd["spec"]
    scope = spec.get("scope", "Namespaced")
    (version,) = [v for v in spec["versions"] if v.get("referenceable")]
    s = copy.deepcopy(version["schema"]["openAPIV3Schema"])
    xspec: Schema = s.get("properties", {}).get("spec", {})
    xstatus: Schema = s.get("properties", {}).get("status", {})

    max_len = _MAX_COMPOSITE_NAME_LENGTH
    old = s.get("properties", {}).get("metadata", {}).get("properties", {}).get("name", {})
    if "maxLength" in old and old["maxLength"] < max_len:
        max_len = old["maxLength"]

    cspec: Schema = {"type": "object", "properties": {}}
    for key in ("required", "x-kubernetes-validations", "oneOf"):
        if key in xspec:
            cspec[key] = xspec[key]
    if "x-kubernetes-preserve-unknown-fields" in xspec:
        cspec["x-kubernetes-preserve-unknown-fields"] = xspec["x-kubernetes-preserve-unknown-fields"]
    if "description" in xspec:
        cspec["description"] = xspec["description"]
    cspec["properties"].update(xspec.get("properties", {}))
    cspec["properties"].update(_crossplane_spec_props(scope, spec.get("defaultCompositionUpdatePolicy", "Automatic")))

    cstatus: Schema = {"type": "object", "properties": {}}
    for key in ("required", "x-kubernetes-validations", "oneOf", "description"):
        if key in xstatus:
            cstatus[key] = xstatus[key]
    cstatus["properties"].update(xstatus.get("properties", {}))
    cstatus["properties"].update(_crossplane_status_props())

    out: Schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": max_len}},
            },
            "spec": cspec,
            "status": cstatus,
        },
    }
    if "description" in s:
        out["description"] = s["description"]
    return out


# --------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry and where it sits in a schema."""

    kind: str
    path: str  # schema path: "spec.devices[*]", "spec.devices[*].attributes[*]"
    rule: str
    message: str
    field_path: str = ""

    @property
    def id(self) -> str:
        return f"{self.kind} {self.path}: {self.rule}"

    @property
    def transition(self) -> bool:
        """Whether the rule compares with the old object (never evaluated on create)."""
        return re.search(r"\boldSelf\b", self.rule) is not None


@dataclass(frozen=True)
class Evaluation:
    """The outcome of one rule at one node of one object."""

    rule: Rule
    field: str  # instance path: "spec.devices[0]"
    passed: bool
    error: str | None = None  # set when the rule could not be evaluated
    value_type: str = "object"  # the JSON type of the node's value, as the API server reports it


@dataclass(frozen=True)
class Result:
    """What the API server would say about one manifest."""

    object: JSON  # the manifest after defaulting
    errors: tuple[str, ...] = ()
    evaluations: tuple[Evaluation, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.errors


# --------------------------------------------------------------------------
# Defaulting (k8s.io/apiextensions-apiserver structural defaulting)


def _is_object(node: Schema) -> bool:
    return node.get("type") == "object" or "properties" in node or "additionalProperties" in node


def apply_defaults(schema: Schema, value: JSON) -> JSON:
    """Return a copy of ``value`` with schema defaults applied and nulls pruned, as the API server does."""
    out = copy.deepcopy(value)
    _default(schema, out)
    return out


def _default(node: Schema, value: JSON) -> None:
    if isinstance(value, dict):
        props: Schema = node.get("properties", {})
        for name, sub in props.items():
            if name in value and value[name] is None and not sub.get("nullable", False):
                del value[name]
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
        additional = node.get("additionalProperties")
        for name, item in value.items():
            if name in props:
                _default(props[name], item)
            elif isinstance(additional, dict):
                _default(additional, item)
    elif isinstance(value, list):
        items = node.get("items")
        if isinstance(items, dict):
            for item in value:
                _default(items, item)


# --------------------------------------------------------------------------
# OpenAPI v3 (structural, Kubernetes flavour) to JSON Schema


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


def to_json_schema(node: Schema, *, strict: bool = True, in_junctor: bool = False) -> Schema:
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


_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("date-time")(_check_date_time)
_FORMATS.checks("int32")(_check_int32)
_FORMATS.checks("int64")(_check_int64)


def _fmt_path(parts: Iterator[str | int] | list[str | int] | tuple[str | int, ...]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif out == "":
            out = p
        else:
            out += f".{p}"
    return out or "<root>"


def _type_name(value: JSON) -> str:
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


def _short(value: JSON) -> str:
    if isinstance(value, (dict, list)):
        return f'"{_type_name(value)}"'
    return json.dumps(value)


# Schema failures the API server treats as blocking: it then skips CEL rules
# (apiextensions-apiserver hasBlockingErr: NotSupported, Required, TooLong,
# TooMany, TypeInvalid).
_BLOCKING_VALIDATORS = frozenset({"enum", "required", "maxLength", "maxItems", "maxProperties", "type"})
RULES_NOT_CHECKED = (
    "<root>: Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def _schema_error_messages(error: jsonschema.ValidationError) -> list[str]:
    """Render a jsonschema error the way the API server words the same failure."""
    path = list(error.absolute_path)
    where = _fmt_path(path)
    v = error.validator
    val = error.validator_value
    inst = error.instance
    messages: dict[str, str] = {
        "enum": f"{where}: Unsupported value: {_short(inst)}: supported values: "
        + ", ".join(json.dumps(x) for x in (val if isinstance(val, list) else [])),
        "minimum": f"{where}: Invalid value: {inst}: {where} in body should be greater than or equal to {val}",
        "maximum": f"{where}: Invalid value: {inst}: {where} in body should be less than or equal to {val}",
        "exclusiveMinimum": f"{where}: Invalid value: {inst}: {where} in body should be greater than {val}",
        "exclusiveMaximum": f"{where}: Invalid value: {inst}: {where} in body should be less than {val}",
        "pattern": f"{where}: Invalid value: {_short(inst)}: {where} in body should match '{val}'",
        "maxLength": f"{where}: Too long: may not be more than {val} bytes",
        "minLength": f"{where}: Invalid value: {_short(inst)}: {where} in body should be at least {val} chars long",
        "format": f"{where}: Invalid value: {_short(inst)}: {where} in body must be of type {val}: {_short(inst)}",
    }
    if v == "required":
        missing = [name for name in val if isinstance(inst, dict) and name not in inst]
        return [f"{_fmt_path([*path, name])}: Required value" for name in missing]
    if v == "additionalProperties":
        declared = set(error.schema.get("properties", {}))
        extra = sorted(k for k in inst if k not in declared) if isinstance(inst, dict) else []
        return [f'{_fmt_path([*path, k])}: unknown field "{_fmt_path([*path, k])}"' for k in extra]
    if v == "type":
        want = " or ".join(val) if isinstance(val, list) else val
        return [f"{where}: Invalid value: {_short(inst)}: {where} in body must be of type {want}: {_short(inst)}"]
    if v in ("maxItems", "maxProperties"):
        return [f"{where}: Too many: {len(inst)}: must have at most {val} items"]
    if v == "minItems":
        return [f"{where}: Invalid value: {len(inst)}: {where} in body should have at least {val} items"]
    if v == "minProperties":
        return [f"{where}: Invalid value: {len(inst)}: {where} in body should have at least {val} properties"]
    return [messages.get(str(v), f"{where}: {error.message}")]


# --------------------------------------------------------------------------
# CEL


def _lower_ascii(s: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType(s.lower())


def _upper_ascii(s: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType(s.upper())


# The few Kubernetes CEL library functions the CRDs we validate against use.
# Our own XRDs must stick to PORTABLE_CEL_FUNCTIONS (tested).
_KUBERNETES_FUNCTIONS: dict[str, Any] = {"lowerAscii": _lower_ascii, "upperAscii": _upper_ascii}

_ENV = celpy.Environment()


@functools.cache
def compile_rule(rule: str) -> celpy.Runner:
    """Compile a CEL rule with cel-python; raises ``CELParseError`` when it does not parse."""
    return _ENV.program(_ENV.compile(rule), functions=_KUBERNETES_FUNCTIONS)


_STRING_LITERAL = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"", re.S)
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def rule_function_names(rule: str) -> set[str]:
    """Names of the functions and macros a CEL rule calls (string literals ignored)."""
    return set(_CALL.findall(_STRING_LITERAL.sub("''", rule)))


def _to_cel(value: JSON, node: Schema | None) -> Any:
    """Convert JSON to CEL values typed by the schema, as the API server binds ``self``."""
    node = node or {}
    dynamic = node.get("x-kubernetes-int-or-string") or ("type" not in node)
    if value is None:
        return None
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, (int, float)):
        if node.get("type") == "number" or isinstance(value, float):
            return celtypes.DoubleType(float(value))
        return celtypes.IntType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, list):
        items = node.get("items") if not dynamic or "items" in node else None
        return celtypes.ListType([_to_cel(v, items if isinstance(items, dict) else None) for v in value])
    if isinstance(value, dict):
        props = node.get("properties", {})
        additional = node.get("additionalProperties")
        return celtypes.MapType(
            {
                celtypes.StringType(k): _to_cel(
                    v, props.get(k) if k in props else additional if isinstance(additional, dict) else None
                )
                for k, v in value.items()
            }
        )
    return json_to_cel(value)


def _evaluate(rule: Rule, value: JSON, node: Schema) -> tuple[bool, str | None]:
    try:
        result = compile_rule(rule.rule).evaluate({"self": _to_cel(value, node)})
    except Exception as e:  # noqa: BLE001 - any failure is an evaluation error the API server would report
        return False, f"{type(e).__name__}: {e}"
    if isinstance(result, CELEvalError):
        return False, f"CELEvalError: {result}"
    if not isinstance(result, celtypes.BoolType):
        return False, f"rule returned {type(result).__name__}, not bool"
    return bool(result), None


def _walk_rules(kind: str, node: Schema, value: JSON, path: list[str | int], schema_path: str) -> Iterator[Evaluation]:
    for entry in node.get("x-kubernetes-validations", []):
        rule = Rule(
            kind=kind,
            path=schema_path or "<root>",
            rule=entry["rule"],
            message=entry.get("message", f"failed rule: {entry['rule']}"),
            field_path=entry.get("fieldPath", ""),
        )
        if rule.transition:
            continue
        passed, error = _evaluate(rule, value, node)
        yield Evaluation(rule=rule, field=_fmt_path(path), passed=passed, error=error, value_type=_type_name(value))
    if isinstance(value, dict):
        props: Schema = node.get("properties", {})
        additional = node.get("additionalProperties")
        for name, item in value.items():
            if item is None:
                continue
            if name in props:
                sub = f"{schema_path}.{name}" if schema_path else name
                yield from _walk_rules(kind, props[name], item, [*path, name], sub)
            elif isinstance(additional, dict):
                yield from _walk_rules(kind, additional, item, [*path, name], f"{schema_path}[*]")
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            if item is not None:
                yield from _walk_rules(kind, node["items"], item, [*path, i], f"{schema_path}[*]")


def _evaluation_error(e: Evaluation) -> str:
    where = e.field if not e.rule.field_path else f"{e.field}{e.rule.field_path}"
    if e.error is not None:
        return f'{where}: Invalid value: "{e.value_type}": rule {e.rule.rule!r} could not be evaluated: {e.error}'
    return f'{where}: Invalid value: "{e.value_type}": {e.rule.message}'


def iter_rules(kind: str, node: Schema, path: str = "") -> Iterator[Rule]:
    """Every CEL rule in a schema, with its schema path."""
    for entry in node.get("x-kubernetes-validations", []):
        yield Rule(
            kind=kind,
            path=path or "<root>",
            rule=entry["rule"],
            message=entry.get("message", f"failed rule: {entry['rule']}"),
            field_path=entry.get("fieldPath", ""),
        )
    for name, sub in node.get("properties", {}).items():
        yield from iter_rules(kind, sub, f"{path}.{name}" if path else name)
    if isinstance(node.get("additionalProperties"), dict):
        yield from iter_rules(kind, node["additionalProperties"], f"{path}[*]")
    if isinstance(node.get("items"), dict):
        yield from iter_rules(kind, node["items"], f"{path}[*]")


def rules(kind: str | None = None) -> list[Rule]:
    """Every CEL rule of our XRDs (or of one kind), as the generated CRD carries them."""
    out: list[Rule] = []
    for k, d in sorted(definitions().items()):
        if kind is None or k == kind:
            out.extend(iter_rules(k, d.crd_schema))
    return out


# --------------------------------------------------------------------------
# Metadata (validated natively by the API server, not by the schema)


def _qualified_name_errors(key: str) -> list[str]:
    prefix, _, name = key.rpartition("/")
    errs = []
    if "/" in key and (not prefix or len(prefix) > _MAX_DNS1123_SUBDOMAIN or not _DNS1123_SUBDOMAIN.match(prefix)):
        errs.append(f"prefix {prefix!r} must be a DNS subdomain")
    if not name or len(name) > _MAX_DNS1123_LABEL or not _QUALIFIED_NAME.match(name):
        errs.append(f"name part {name!r} must be 63 characters or less, alphanumeric, '-', '_' or '.'")
    return errs


def metadata_errors(manifest: JSON, *, namespaced: bool) -> list[str]:
    """Errors the API server's ObjectMeta validation would report."""
    meta = manifest.get("metadata")
    if not isinstance(meta, dict):
        return ["metadata: Required value"]
    errs: list[str] = []
    name = meta.get("name")
    if name is None and "generateName" not in meta:
        errs.append("metadata.name: Required value: name or generateName is required")
    if name is not None and (
        not isinstance(name, str) or len(name) > _MAX_DNS1123_SUBDOMAIN or not _DNS1123_SUBDOMAIN.match(name)
    ):
        errs.append(f"metadata.name: Invalid value: {json.dumps(name)}: must be a lowercase RFC 1123 subdomain")
    namespace = meta.get("namespace")
    if namespace is not None and not namespaced:
        errs.append(f"metadata.namespace: Invalid value: {json.dumps(namespace)}: the kind is cluster-scoped")
    if namespace is not None and (
        not isinstance(namespace, str) or len(namespace) > _MAX_DNS1123_LABEL or not _DNS1123_LABEL.match(namespace)
    ):
        errs.append(f"metadata.namespace: Invalid value: {json.dumps(namespace)}: must be a DNS label")
    for key, value in (meta.get("labels") or {}).items():
        errs.extend(f"metadata.labels: Invalid value: {key!r}: {e}" for e in _qualified_name_errors(str(key)))
        if not isinstance(value, str) or (
            value and (len(value) > _MAX_DNS1123_LABEL or not _QUALIFIED_NAME.match(value))
        ):
            errs.append(f"metadata.labels: Invalid value: {json.dumps(value)}: must be a label value")
    for key, value in (meta.get("annotations") or {}).items():
        errs.extend(f"metadata.annotations: Invalid value: {key!r}: {e}" for e in _qualified_name_errors(str(key)))
        if not isinstance(value, str):
            errs.append(f"metadata.annotations.{key}: Invalid value: {json.dumps(value)}: must be a string")
    return errs


# --------------------------------------------------------------------------
# List semantics (x-kubernetes-list-type)


def _list_type_errors(node: Schema, value: JSON, path: list[str | int]) -> Iterator[str]:
    if isinstance(value, list):
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "set":
            seen: list[JSON] = []
            for i, item in enumerate(value):
                if item in seen:
                    yield f"{_fmt_path([*path, i])}: Duplicate value: {_short(item)}"
                seen.append(item)
        elif list_type == "map":
            keys = node.get("x-kubernetes-list-map-keys", [])
            seen_keys: list[tuple[JSON, ...]] = []
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    k = tuple(item.get(key) for key in keys)
                    if k in seen_keys:
                        shown = ", ".join(f'"{key}":{json.dumps(item.get(key))}' for key in keys)
                        yield f"{_fmt_path([*path, i])}: Duplicate value: map[string]interface {{}}{{{shown}}}"
                    seen_keys.append(k)
        items = node.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                yield from _list_type_errors(items, item, [*path, i])
    elif isinstance(value, dict):
        props: Schema = node.get("properties", {})
        additional = node.get("additionalProperties")
        for name, item in value.items():
            if name in props:
                yield from _list_type_errors(props[name], item, [*path, name])
            elif isinstance(additional, dict):
                yield from _list_type_errors(additional, item, [*path, name])


# --------------------------------------------------------------------------
# Validators


class Validator:
    """Validates objects against one CRD version's schema: defaults, schema, list types, CEL."""

    def __init__(self, kind: str, schema: Schema, *, namespaced: bool, strict: bool = True) -> None:
        self.kind = kind
        self.schema = schema
        self.namespaced = namespaced
        json_schema = to_json_schema(schema, strict=strict)
        # Every object carries its type meta, declared or not.
        for name in ("apiVersion", "kind"):
            json_schema.setdefault("properties", {}).setdefault(name, {"type": "string"})
        # The API server validates metadata natively (metadata_errors); the schema only restricts the name.
        json_schema.setdefault("properties", {})["metadata"] = to_json_schema(
            schema.get("properties", {}).get("metadata", {"type": "object"}), strict=False
        )
        self._validator = jsonschema.Draft202012Validator(json_schema, format_checker=_FORMATS)

    def validate(self, manifest: JSON) -> Result:
        """Default, then validate ``manifest``; every error the API server would report."""
        obj = apply_defaults(self.schema, manifest)
        errors: list[str] = []
        if isinstance(obj, dict):
            errors.extend(metadata_errors(obj, namespaced=self.namespaced))
        blocking = False
        for error in sorted(self._validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
            errors.extend(_schema_error_messages(error))
            blocking = blocking or error.validator in _BLOCKING_VALIDATORS
        errors.extend(_list_type_errors(self.schema, obj, []))
        if blocking:
            errors.append(RULES_NOT_CHECKED)
            return Result(object=obj, errors=tuple(errors))
        evaluations = tuple(_walk_rules(self.kind, self.schema, obj, [], ""))
        for e in evaluations:
            if not e.passed:
                errors.append(_evaluation_error(e))
        return Result(object=obj, errors=tuple(errors), evaluations=evaluations)


@functools.cache
def xr_validator(kind: str) -> Validator:
    """The validator of one of our kinds, built from its XRD like Crossplane builds the CRD."""
    d = definitions()[kind]
    return Validator(kind, d.crd_schema, namespaced=d.scope == "Namespaced")


def _crd_files_for_group(group: str) -> list[Path]:
    exact = sorted(CRDS_DIR.rglob(f"{group}_*.yaml"))
    return exact or sorted(CRDS_DIR.rglob("*.yaml"))


@functools.cache
def _crd_documents(path: Path) -> tuple[JSON, ...]:
    return tuple(load_documents(path))


@functools.cache
def shared_crds() -> tuple[JSON, ...]:
    """Every CustomResourceDefinition in the shared CRDs."""
    return tuple(
        doc
        for path in sorted(CRDS_DIR.rglob("*.yaml"))
        for doc in _crd_documents(path)
        if doc.get("kind") == "CustomResourceDefinition"
    )


@functools.cache
def crd_validator(api_version: str, kind: str) -> Validator | None:
    """The validator for a custom resource kind whose CRD is in the shared CRDs, or None."""
    group, _, version = api_version.rpartition("/")
    if not group:
        return None
    # Later paths win: newer releases sort after older ones (e.g. v1.6.0 after v1.5.0).
    found: Validator | None = None
    for path in _crd_files_for_group(group):
        for doc in _crd_documents(path):
            if doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            if spec["group"] != group or spec["names"]["kind"] != kind:
                continue
            for v in spec["versions"]:
                if v["name"] == version and v.get("served", True):
                    found = Validator(
                        kind,
                        v["schema"]["openAPIV3Schema"],
                        namespaced=spec["scope"] == "Namespaced",
                    )
    return found


def crd_version_schema(path: Path, version: str) -> Schema:
    """The openAPIV3Schema of one version of the single CRD in ``path``."""
    crd = load_document(path)
    (v,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return dict(v["schema"]["openAPIV3Schema"])


@functools.cache
def _kubernetes_openapi() -> JSON:
    with KUBERNETES_OPENAPI.open(encoding="utf-8") as f:
        doc = json.load(f)
    defs = doc["definitions"]
    # Both marshal from a YAML number as well as a string.
    defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {"type": ["string", "integer", "number"]}
    defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {"type": ["string", "integer"]}
    return doc


class BuiltinValidator:
    """Validates built-in kinds against the Kubernetes OpenAPI (v2) definitions; no defaults, no CEL."""

    def __init__(self, kind: str, definition: str, *, namespaced: bool) -> None:
        self.kind = kind
        self.namespaced = namespaced
        doc = _kubernetes_openapi()
        schema = {"$ref": f"#/definitions/{definition}", "definitions": doc["definitions"]}
        self._validator = jsonschema.Draft202012Validator(schema, format_checker=_FORMATS)

    def validate(self, manifest: JSON) -> Result:
        errors = metadata_errors(manifest, namespaced=self.namespaced)
        for error in self._validator.iter_errors(manifest):
            errors.extend(_schema_error_messages(error))
        return Result(object=manifest, errors=tuple(errors))


# Built-in cluster-scoped kinds an example might carry; everything else built in is namespaced.
_CLUSTER_SCOPED_BUILTINS = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "ClusterRole",
        "ClusterRoleBinding",
        "StorageClass",
        "PriorityClass",
        "DeviceClass",
        "ResourceSlice",
        "CustomResourceDefinition",
    }
)


@functools.cache
def builtin_validator(api_version: str, kind: str) -> BuiltinValidator | None:
    """The validator for a built-in Kubernetes kind, or None."""
    group, _, version = api_version.rpartition("/")
    for name, definition in _kubernetes_openapi()["definitions"].items():
        for gvk in definition.get("x-kubernetes-group-version-kind", []):
            if gvk["group"] == group and gvk["version"] == version and gvk["kind"] == kind:
                return BuiltinValidator(kind, name, namespaced=kind not in _CLUSTER_SCOPED_BUILTINS)
    return None


def validate(manifest: JSON) -> Result:
    """Validate any manifest: our kinds against their XRD, others against their CRD or built-in schema."""
    if not isinstance(manifest, dict):
        return Result(object=manifest, errors=("<root>: Invalid value: not an object",))
    api_version = manifest.get("apiVersion")
    kind = manifest.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return Result(object=manifest, errors=("apiVersion and kind: Required value",))
    if api_version == kinds.API_VERSION:
        if kind not in definitions():
            return Result(object=manifest, errors=(f"no XRD defines {api_version} {kind}",))
        return xr_validator(kind).validate(manifest)
    validator: Validator | BuiltinValidator | None = crd_validator(api_version, kind) or builtin_validator(
        api_version, kind
    )
    if validator is None:
        return Result(object=manifest, errors=(f"no schema found for {api_version} {kind}",))
    return validator.validate(manifest)


# --------------------------------------------------------------------------
# Schema checks (Kubernetes' structural schema rules and our conventions)


_FORBIDDEN_KEYWORDS = ("$ref", "definitions", "dependencies", "patternProperties", "id", "$schema", "additionalItems")


def _children(node: Schema, path: str) -> Iterator[tuple[str, Schema]]:
    for name, sub in node.get("properties", {}).items():
        yield (f"{path}.{name}" if path else name), sub
    if isinstance(node.get("additionalProperties"), dict):
        yield f"{path}[*]", node["additionalProperties"]
    if isinstance(node.get("items"), dict):
        yield f"{path}[*]", node["items"]


def iter_nodes(node: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every node of a schema (outside junctors) with its schema path; the root is ``""``."""
    yield path, node
    for child_path, child in _children(node, path):
        yield from iter_nodes(child, child_path)


def default_errors(kind: str, schema: Schema) -> list[str]:
    """Errors the API server reports for schema defaults when it creates the CRD.

    Each ``default`` is validated against its node's schema and CEL rules as it is
    written: the API server does not apply nested defaults to it first, so a
    ``default: {}`` whose rules read ``self.type`` fails with "no such key: type"
    even though ``type`` has a default of its own.
    """
    errs: list[str] = []
    for path, node in iter_nodes(schema):
        if "default" not in node:
            continue
        where = f"{path or '<root>'}.default"
        value = node["default"]
        validator = jsonschema.Draft202012Validator(to_json_schema(node), format_checker=_FORMATS)
        errs.extend(f"{where}: {m}" for e in validator.iter_errors(value) for m in _schema_error_messages(e))
        for e in _walk_rules(kind, node, value, [], path):
            if not e.passed:
                errs.append(f"{where}: {_evaluation_error(e)}")
    return errs


def structural_errors(schema: Schema) -> list[str]:
    """Violations of Kubernetes' structural schema rules (apiextensions v1)."""
    errs: list[str] = []
    for path, node in iter_nodes(schema):
        where = path or "<root>"
        int_or_string = node.get("x-kubernetes-int-or-string") is True
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        if "type" not in node and not (int_or_string or preserve):
            errs.append(f"{where}: type must be set")
        if int_or_string and "type" in node:
            errs.append(f"{where}: type must not be set with x-kubernetes-int-or-string")
        if node.get("x-kubernetes-preserve-unknown-fields") is False:
            errs.append(f"{where}: x-kubernetes-preserve-unknown-fields must be true or unset")
        errs.extend(f"{where}: {k} is not allowed" for k in _FORBIDDEN_KEYWORDS if k in node)
        if node.get("uniqueItems") is True:
            errs.append(f"{where}: uniqueItems cannot be true (use x-kubernetes-list-type: set)")
        if node.get("additionalProperties") is False:
            errs.append(f"{where}: additionalProperties cannot be false")
        if "properties" in node and "additionalProperties" in node:
            errs.append(f"{where}: properties and additionalProperties are mutually exclusive")
        if node.get("type") == "array" and not isinstance(node.get("items"), dict):
            errs.append(f"{where}: items must be a schema for type array")
        if node.get("type") not in (None, "object") and ("properties" in node or "additionalProperties" in node):
            errs.append(f"{where}: properties only allowed for type object")
        for junctor in ("allOf", "anyOf", "oneOf"):
            for sub in node.get(junctor, []):
                errs.extend(_junctor_errors(sub, f"{where}.{junctor}", node))
        if "not" in node:
            errs.extend(_junctor_errors(node["not"], f"{where}.not", node))
        if node.get("x-kubernetes-list-type") == "map":
            items = node.get("items", {})
            keys = node.get("x-kubernetes-list-map-keys", [])
            if not keys:
                errs.append(f"{where}: x-kubernetes-list-map-keys must be set for a map list")
            for key in keys:
                sub = items.get("properties", {}).get(key)
                if sub is None or (key not in items.get("required", []) and "default" not in sub):
                    errs.append(f"{where}: map key {key!r} must be a required or defaulted property of items")
        if "default" in node:
            if path in ("metadata", "apiVersion", "kind") or path.startswith("metadata."):
                errs.append(f"{where}: default not allowed in metadata")
            errs.extend(f"{where}: default: {e}" for e in _default_errors(node))
        if path == "metadata" and set(node.get("properties", {})) - {"name", "generateName"}:
            errs.append("metadata: only name and generateName may be restricted")
    return errs


def _junctor_errors(sub: Schema, where: str, outer: Schema) -> list[str]:
    errs = [
        f"{where}: {k} must not be set inside a junctor"
        for k in ("type", "default", "additionalProperties", "nullable", "description")
        if k in sub
    ]
    errs.extend(
        f"{where}: property {name!r} must also be specified outside the junctor"
        for name in sub.get("properties", {})
        if name not in outer.get("properties", {})
    )
    return errs


def _default_errors(node: Schema) -> list[str]:
    value = apply_defaults(node, node["default"])
    validator = jsonschema.Draft202012Validator(to_json_schema(node), format_checker=_FORMATS)
    errs = [m for e in validator.iter_errors(value) for m in _schema_error_messages(e)]
    errs.extend(f"{e.field}: {e.rule.message}" for e in _walk_rules("default", node, value, [], "") if not e.passed)
    return errs


def missing_descriptions(schema: Schema) -> list[str]:
    """Schema paths of properties without a description (``kubectl explain`` shows nothing)."""
    return [
        path for path, node in iter_nodes(schema) if path and not path.endswith("[*]") and not node.get("description")
    ]


def unbounded_collections(schema: Schema) -> list[str]:
    """Lists and maps a CEL rule iterates without maxItems/maxProperties (the API server's cost budget).

    A list or map counts when it carries a rule, encloses a node that carries a
    rule (the rule runs once per element), or is a descendant of a rule's node
    named in the rule's text.
    """
    nodes = dict(iter_nodes(schema))
    out: set[str] = set()

    def collection(path: str) -> bool:
        n = nodes[path]
        return n.get("type") == "array" or (
            n.get("type") == "object" and isinstance(n.get("additionalProperties"), dict)
        )

    def bounded(path: str) -> bool:
        n = nodes[path]
        return "maxItems" in n or "maxProperties" in n

    for path, node in nodes.items():
        if not node.get("x-kubernetes-validations"):
            continue
        text = " ".join(r["rule"] for r in node["x-kubernetes-validations"])
        idents = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _STRING_LITERAL.sub("''", text)))
        candidates = {path}
        # Enclosing collections multiply the rule's cost.
        parts = path.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            candidates.add(prefix)
            if prefix.endswith("[*]"):
                candidates.add(prefix.removesuffix("[*]"))
        for other in nodes:
            if other.startswith(f"{path}.") or (path == "" and other):
                rest = other[len(path) :].lstrip(".")
                if all(seg.removesuffix("[*]") in idents for seg in rest.split(".") if seg):
                    candidates.add(other)
        out |= {c for c in candidates if c in nodes and collection(c) and not bounded(c)}
    return sorted(out)


def printer_column_errors(schema: Schema, columns: list[JSON]) -> list[str]:
    """Printer columns whose jsonPath names no field of the schema, or whose type does not fit it."""
    errs: list[str] = []
    nodes = dict(iter_nodes(schema))
    kinds_by_column: dict[str, set[str | None]] = {
        "string": {"string", None},
        "integer": {"integer"},
        "number": {"number", "integer"},
        "boolean": {"boolean"},
        "date": {"string"},
    }
    for col in columns:
        json_path = col["jsonPath"]
        path = re.sub(r"\[\?\(.*?\)\]|\[\d+\]|\[\*\]", "[*]", json_path).lstrip(".")
        path = path.replace(".[*]", "[*]")
        if path not in nodes:
            errs.append(f"column {col['name']}: {json_path} names no field of the schema")
            continue
        node = nodes[path]
        have = None if node.get("x-kubernetes-int-or-string") else node.get("type")
        if have not in kinds_by_column.get(col["type"], set()):
            errs.append(f"column {col['name']}: type {col['type']} does not fit {json_path} ({have})")
    return errs


def iter_example_documents() -> Iterator[tuple[Path, int, JSON]]:
    """Every YAML document under ``examples/`` with its file and index."""
    for path in sorted(EXAMPLES_DIR.rglob("*")):
        if path.suffix in (".yaml", ".yml") and path.is_file():
            for i, doc in enumerate(load_documents(path)):
                yield path, i, doc


def kind_for_plural(plural: str) -> kinds.Kind:
    """The kinds.py row of a plural."""
    (k,) = [k for k in kinds.KINDS if k.plural == plural]
    return k
