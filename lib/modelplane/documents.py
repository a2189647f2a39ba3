"""Read YAML as the Kubernetes API server reads it into JSON: the one loader of render, preview and admission.

YAML 1.1 as go-yaml reads it (``yes`` is a boolean), with one difference from
PyYAML's safe loader: a timestamp stays the string it is written as, as JSON
has no timestamps. libyaml parses when it is installed (CRDs run to megabytes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

JSON = Any
"""A JSON value as a YAML document reads: dicts, lists, strings, numbers, booleans and None."""

_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE):  # type: ignore[misc]  # the C loader is untyped
    """The safe loader without the timestamp resolver."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class DocumentError(ValueError):
    """Text that is not the YAML expected; the message says why (and where, for a YAML error)."""


def load_all(text: str) -> list[JSON]:
    """Every non-empty document of a YAML stream."""
    try:
        return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except yaml.YAMLError as err:
        raise DocumentError(str(err)) from err


def load_maps(text: str) -> list[dict[str, Any]]:
    """Every non-empty document of a YAML stream, each a map (a manifest); anything else is an error."""
    docs = load_all(text)
    for doc in docs:
        if not isinstance(doc, dict):
            msg = f"expected a YAML map, got {type(doc).__name__}"
            raise DocumentError(msg)
    return docs


def load_one(text: str) -> dict[str, Any]:
    """The first document of a YAML stream, a map, as Kubernetes' ``yaml.Unmarshal`` reads a file."""
    docs = load_maps(text)
    if not docs:
        msg = "no YAML document found"
        raise DocumentError(msg)
    return docs[0]


def load_value(text: str) -> JSON:
    """One YAML or JSON value (``None`` for an empty text)."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as err:
        raise DocumentError(str(err)) from err


def read_all(path: Path) -> list[JSON]:
    """Every non-empty document of the YAML file ``path``."""
    return load_all(path.read_text(encoding="utf-8"))


def read_one(path: Path) -> JSON:
    """The only document of the YAML file ``path``.

    Raises:
        DocumentError: the file holds no document or several.
    """
    docs = read_all(path)
    if len(docs) != 1:
        msg = f"{path}: want exactly one YAML document, got {len(docs)}"
        raise DocumentError(msg)
    return docs[0]
