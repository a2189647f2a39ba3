"""What the API server does to an object besides its schema: defaults, ObjectMeta checks, list semantics."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator

from modelplane.admission.documents import JSON, Schema
from modelplane.admission.openapi import fmt_path, short

_MAX_DNS1123_SUBDOMAIN = 253
_MAX_DNS1123_LABEL = 63
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


# --------------------------------------------------------------------------
# Defaulting (k8s.io/apiextensions-apiserver structural defaulting)


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
# Metadata (validated natively by the API server, not by the schema)


def _qualified_name_errors(key: str) -> list[str]:
    prefix, _, name = key.rpartition("/")
    errs = []
    if "/" in key and (not prefix or len(prefix) > _MAX_DNS1123_SUBDOMAIN or not _DNS1123_SUBDOMAIN.match(prefix)):
        errs.append(f"prefix {prefix!r} must be a DNS subdomain")
    if not name or len(name) > _MAX_DNS1123_LABEL or not _QUALIFIED_NAME.match(name):
        errs.append(f"name part {name!r} must be 63 characters or less, alphanumeric, '-', '_' or '.'")
    return errs


# The API server's words for a bad label value (k8s.io/apimachinery IsValidLabelValue).
_LABEL_VALUE_TOO_LONG = "must be no more than 63 characters"
_LABEL_VALUE_FORMAT = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def drop_namespace(manifest: JSON, *, namespaced: bool) -> JSON:
    """``manifest`` as the API server stores it: a cluster-scoped object keeps no ``metadata.namespace``."""
    meta = manifest.get("metadata") if isinstance(manifest, dict) else None
    if namespaced or not isinstance(meta, dict) or "namespace" not in meta:
        return manifest
    return {**manifest, "metadata": {k: v for k, v in meta.items() if k != "namespace"}}


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
    # A namespace on a cluster-scoped kind is not an error: the API server drops it (see drop_namespace).
    namespace = meta.get("namespace") if namespaced else None
    if namespace is not None and (
        not isinstance(namespace, str) or len(namespace) > _MAX_DNS1123_LABEL or not _DNS1123_LABEL.match(namespace)
    ):
        errs.append(f"metadata.namespace: Invalid value: {json.dumps(namespace)}: must be a DNS label")
    for key, value in (meta.get("labels") or {}).items():
        errs.extend(f"metadata.labels: Invalid value: {key!r}: {e}" for e in _qualified_name_errors(str(key)))
        if not isinstance(value, str):
            errs.append(f"metadata.labels: Invalid value: {json.dumps(value)}: must be a string")
        elif len(value) > _MAX_DNS1123_LABEL:
            errs.append(f"metadata.labels: Invalid value: {json.dumps(value)}: {_LABEL_VALUE_TOO_LONG}")
        elif value and not _QUALIFIED_NAME.match(value):
            errs.append(f"metadata.labels: Invalid value: {json.dumps(value)}: {_LABEL_VALUE_FORMAT}")
    for key, value in (meta.get("annotations") or {}).items():
        errs.extend(f"metadata.annotations: Invalid value: {key!r}: {e}" for e in _qualified_name_errors(str(key)))
        if not isinstance(value, str):
            errs.append(f"metadata.annotations.{key}: Invalid value: {json.dumps(value)}: must be a string")
    return errs


# --------------------------------------------------------------------------
# List semantics (x-kubernetes-list-type)


def list_type_errors(node: Schema, value: JSON, path: list[str | int]) -> Iterator[str]:  # noqa: PLR0912 - set, map, and the walk
    """Duplicates in ``x-kubernetes-list-type`` set and map lists, anywhere under ``value``."""
    if isinstance(value, list):
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "set":
            seen: list[JSON] = []
            for i, item in enumerate(value):
                if item in seen:
                    yield f"{fmt_path([*path, i])}: Duplicate value: {short(item)}"
                seen.append(item)
        elif list_type == "map":
            keys = node.get("x-kubernetes-list-map-keys", [])
            seen_keys: list[tuple[JSON, ...]] = []
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    k = tuple(item.get(key) for key in keys)
                    if k in seen_keys:
                        shown = ", ".join(f'"{key}":{json.dumps(item.get(key))}' for key in keys)
                        yield f"{fmt_path([*path, i])}: Duplicate value: map[string]interface {{}}{{{shown}}}"
                    seen_keys.append(k)
        items = node.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                yield from list_type_errors(items, item, [*path, i])
    elif isinstance(value, dict):
        props: Schema = node.get("properties", {})
        additional = node.get("additionalProperties")
        for name, item in value.items():
            if name in props:
                yield from list_type_errors(props[name], item, [*path, name])
            elif isinstance(additional, dict):
                yield from list_type_errors(additional, item, [*path, name])
