"""Checks of a schema itself: what the API server refuses when it creates the CRD, and our conventions."""

from __future__ import annotations

import re
from collections.abc import Iterator

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not in the dev extras

from modelplane.admission.cel import STRING_LITERAL, Rule, evaluation_error, iter_rules, walk_rules
from modelplane.admission.documents import JSON, Schema
from modelplane.admission.objects import apply_defaults
from modelplane.admission.openapi import FORMATS, schema_error_messages, to_json_schema
from modelplane.admission.xrd import definitions


def rules(kind: str | None = None) -> list[Rule]:
    """Every CEL rule of our XRDs (or of one kind), as the generated CRD carries them."""
    out: list[Rule] = []
    for k, d in sorted(definitions().items()):
        if kind is None or k == kind:
            out.extend(iter_rules(k, d.crd_schema))
    return out


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
        validator = jsonschema.Draft202012Validator(to_json_schema(node), format_checker=FORMATS)
        errs.extend(f"{where}: {m}" for e in validator.iter_errors(value) for m in schema_error_messages(e))
        for e in walk_rules(kind, node, value, [], path):
            if not e.passed:
                errs.append(f"{where}: {evaluation_error(e)}")
    return errs


def structural_errors(schema: Schema) -> list[str]:  # noqa: PLR0912 - one branch per rule of the API server
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
    validator = jsonschema.Draft202012Validator(to_json_schema(node), format_checker=FORMATS)
    errs = [m for e in validator.iter_errors(value) for m in schema_error_messages(e)]
    errs.extend(f"{e.field}: {e.rule.message}" for e in walk_rules("default", node, value, [], "") if not e.passed)
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
        idents = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", STRING_LITERAL.sub("''", text)))
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
