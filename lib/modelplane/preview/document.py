"""The preview as a document (``--output json|yaml``): keys in camelCase, as Kubernetes writes them.

Field names of the preview's dataclasses become camelCase keys; the keys of a
mapping are data (labels, object names) and are kept as they are. Every
document carries ``schemaVersion`` and ``kind``, so a consumer can tell a
preview from a plan or an explanation and notice a change of layout.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from enum import Enum

import yaml

SCHEMA_VERSION = "modelplane.ai/preview/v1"
JSON = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None


def camel(name: str) -> str:
    """``gpus_per_node`` as ``gpusPerNode``."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def plain(value: object) -> JSON:
    """``value`` as JSON-ready data: a dataclass as a mapping of camelCase keys, a tuple as a list."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel(f.name): plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, Enum):
        return plain(value.value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def fields(value: object) -> dict[str, JSON]:
    """A dataclass or a mapping as ``plain`` data; anything else as no fields."""
    content = plain(value)
    return content if isinstance(content, dict) else {}


def versioned(kind: str, body: object) -> dict[str, JSON]:
    """``body`` (a mapping or a dataclass) as a document of ``kind`` (Preview, Plan, Explanation), versioned."""
    return {"schemaVersion": SCHEMA_VERSION, "kind": kind, **fields(body)}


def dump(doc: Mapping[str, JSON], output: str) -> str:
    """``doc`` as ``json`` or ``yaml`` text, keys sorted (a stable diff between two runs)."""
    if output == "json":
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    return yaml.safe_dump(dict(doc), sort_keys=True)
