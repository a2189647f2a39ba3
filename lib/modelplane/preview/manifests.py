"""Load the manifests of a directory, the way ``kubectl apply -R -f DIR`` would see them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from modelplane.kinds import GROUP

Manifest = dict[str, Any]
Key = tuple[str, str, str]  # (kind, namespace, name)


class ManifestError(ValueError):
    """A file that is not a set of Kubernetes manifests."""


def key_of(obj: Manifest) -> Key:
    """Identify an object by kind, namespace and name."""
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind", "")), str(meta.get("namespace", "")), str(meta.get("name", "")))


def is_modelplane(obj: Manifest) -> bool:
    """Report whether ``obj`` is one of Modelplane's own kinds (an XR)."""
    return str(obj.get("apiVersion", "")).split("/", 1)[0] == GROUP


@dataclass(frozen=True)
class Loaded:
    """What a directory holds: Modelplane XRs and everything else (e.g. KEDA objects), and where each came from."""

    xrs: tuple[Manifest, ...]
    others: tuple[Manifest, ...]
    sources: dict[Key, str] = field(default_factory=dict)  # the file each object was read from


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        msg = f"{root}: no such file or directory"
        raise ManifestError(msg)
    paths = sorted(p for p in root.rglob("*") if p.suffix in {".yaml", ".yml"})
    if not paths:
        msg = f"{root}: no .yaml files found"
        raise ManifestError(msg)
    return paths


def load_dir(*roots: Path) -> Loaded:
    """Load every ``*.yaml``/``*.yml`` under each root (or the root itself if it is a file).

    Raises:
        ManifestError: a path holds no manifests, a file does not parse, a document
            is not a Kubernetes object, or two documents name the same object.
    """
    paths = [p for root in roots for p in _files(root)]
    seen: dict[Key, Path] = {}
    xrs: list[Manifest] = []
    others: list[Manifest] = []
    for path in paths:
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except yaml.YAMLError as err:
            msg = f"{path}: not valid YAML: {err}"
            raise ManifestError(msg) from err
        for doc in docs:
            if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
                msg = f"{path}: every document needs apiVersion and kind"
                raise ManifestError(msg)
            if not (doc.get("metadata") or {}).get("name"):
                msg = f"{path}: {doc['kind']} has no metadata.name"
                raise ManifestError(msg)
            key = key_of(doc)
            if key in seen:
                msg = f"{path}: {key[0]} {'/'.join(filter(None, key[1:]))} is also defined in {seen[key]}"
                raise ManifestError(msg)
            seen[key] = path
            (xrs if is_modelplane(doc) else others).append(doc)
    return Loaded(tuple(xrs), tuple(others), {k: str(p) for k, p in seen.items()})
