"""Load the manifests of a directory, the way ``kubectl apply -R -f DIR`` would see them.

A directory with a kustomization (``kustomization.yaml``, ``.yml`` or
``Kustomization``) is built with ``kustomize build``, as ``kubectl apply -k``
would; ``-`` reads a YAML stream from stdin (``kustomize build | modelplane
preview -``). A namespaced object without a namespace is put in ``default``,
as kubectl puts it in the namespace of its context.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplane import documents
from modelplane.admission.catalog import validator_for
from modelplane.kinds import GROUP

Manifest = dict[str, Any]
Key = tuple[str, str, str]  # (kind, namespace, name)

STDIN = Path("-")  # the DIR that reads stdin
STDIN_NAME = "<stdin>"  # stdin as messages name it
DEFAULT_NAMESPACE = "default"
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_KUSTOMIZE_TIMEOUT_SECONDS = 300


class ManifestError(ValueError):
    """A file that is not a set of Kubernetes manifests."""


def key_of(obj: Manifest) -> Key:
    """Identify an object by kind, namespace and name."""
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind", "")), str(meta.get("namespace", "")), str(meta.get("name", "")))


def is_modelplane(obj: Manifest) -> bool:
    """Report whether ``obj`` is one of Modelplane's own kinds (an XR)."""
    return str(obj.get("apiVersion", "")).split("/", 1)[0] == GROUP


def source_name(root: Path) -> str:
    """``root`` as messages name it: ``<stdin>`` for ``-``."""
    return STDIN_NAME if root == STDIN else str(root)


def namespaced(api_version: str, kind: str) -> bool:
    """Whether objects of ``kind`` live in a namespace: as its schema says, else unless it is a Cluster* kind.

    Without a schema the preview cannot ask the API server as kubectl does; most
    custom kinds are namespaced, and cluster-scoped ones are usually named Cluster*.
    """
    validator = validator_for(api_version, kind)
    return validator.namespaced if validator is not None else not kind.startswith("Cluster")


def in_default_namespace(obj: Manifest) -> Manifest:
    """``obj`` with ``metadata.namespace: default`` if its kind is namespaced and it names none."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or meta.get("namespace") or not namespaced(str(obj["apiVersion"]), str(obj["kind"])):
        return obj
    return {**obj, "metadata": {**meta, "namespace": DEFAULT_NAMESPACE}}


@dataclass(frozen=True)
class Loaded:
    """What a directory holds: Modelplane XRs and everything else (e.g. KEDA objects), and where each came from."""

    xrs: tuple[Manifest, ...]
    others: tuple[Manifest, ...]
    sources: dict[Key, str] = field(default_factory=dict)  # the file each object was read from


@dataclass(frozen=True)
class _Stream:
    """A YAML stream and the name messages give it (a file, ``<stdin>``, a kustomize build)."""

    name: str
    read: Callable[[], str]


def _kustomization(directory: Path) -> Path | None:
    return next((directory / n for n in KUSTOMIZATIONS if (directory / n).is_file()), None)


def _kustomize_build(directory: Path, kustomization: Path) -> str:
    tool = shutil.which("kustomize")
    if tool is None:
        msg = (
            f"{kustomization}: building it needs kustomize on PATH "
            f"(or run `kubectl kustomize {directory} | modelplane preview -`)"
        )
        raise ManifestError(msg)
    try:
        done = subprocess.run(  # noqa: S603 - kustomize build DIR, no shell
            [tool, "build", str(directory)],
            capture_output=True,
            text=True,
            check=False,
            timeout=_KUSTOMIZE_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        msg = f"{kustomization}: kustomize build {directory} failed: {err}"
        raise ManifestError(msg) from err
    if done.returncode != 0:
        msg = f"{kustomization}: kustomize build {directory} failed ({done.returncode}): {done.stderr.strip()}"
        raise ManifestError(msg)
    return done.stdout


def _streams(root: Path) -> list[_Stream]:
    """The YAML streams under ``root``: its files, a kustomize build of each kustomization, or stdin."""
    if root == STDIN:
        return [_Stream(STDIN_NAME, sys.stdin.read)]
    if root.is_file():
        return [_Stream(str(root), root.read_text)]
    if not root.is_dir():
        msg = f"{root}: no such file or directory"
        raise ManifestError(msg)
    # A kustomization owns its directory: the files there are its input, not manifests of their own.
    built = sorted(d for d in (root, *(p for p in root.rglob("*") if p.is_dir())) if _kustomization(d))
    outermost = [d for d in built if not any(o != d and o in d.parents for o in built)]
    files = [
        p
        for p in root.rglob("*")
        if p.suffix in {".yaml", ".yml"} and p.is_file() and not any(d in p.parents for d in outermost)
    ]
    streams: list[tuple[Path, _Stream]] = [(p, _Stream(str(p), p.read_text)) for p in files]
    for d in outermost:
        kustomization = _kustomization(d) or d
        streams.append((d, _Stream(f"{d} (kustomize build)", functools.partial(_kustomize_build, d, kustomization))))
    if not streams:
        msg = f"{root}: no .yaml files found"
        raise ManifestError(msg)
    return [s for _, s in sorted(streams, key=lambda item: item[0])]


def load_dir(*roots: Path) -> Loaded:
    """Load every ``*.yaml``/``*.yml`` under each root (or the root itself if it is a file, stdin if ``-``).

    Raises:
        ManifestError: a path holds no manifests, a file does not parse, a document
            is not a Kubernetes object, two documents name the same object, or a
            kustomization cannot be built.
        OSError: a file cannot be read.
    """
    streams = [s for root in roots for s in _streams(root)]
    seen: dict[Key, str] = {}
    xrs: list[Manifest] = []
    others: list[Manifest] = []
    for stream in streams:
        try:
            docs = documents.load_all(stream.read())
        except documents.DocumentError as err:
            msg = f"{stream.name}: not valid YAML: {err}"
            raise ManifestError(msg) from err
        if not docs and stream.name == STDIN_NAME:
            msg = f"{STDIN_NAME}: no manifests"
            raise ManifestError(msg)
        for doc in docs:
            if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
                msg = f"{stream.name}: every document needs apiVersion and kind"
                raise ManifestError(msg)
            if not isinstance(doc.get("metadata") or {}, dict) or not (doc.get("metadata") or {}).get("name"):
                msg = f"{stream.name}: {doc['kind']} has no metadata.name"
                raise ManifestError(msg)
            obj = in_default_namespace(doc)
            key = key_of(obj)
            if key in seen:
                msg = f"{stream.name}: {key[0]} {'/'.join(filter(None, key[1:]))} is also defined in {seen[key]}"
                raise ManifestError(msg)
            seen[key] = stream.name
            (xrs if is_modelplane(obj) else others).append(obj)
    return Loaded(tuple(xrs), tuple(others), dict(seen))
