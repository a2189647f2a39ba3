"""Read YAML manifests and schemas; the JSON value types every admission module shares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

JSON = Any
Schema = dict[str, Any]

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
