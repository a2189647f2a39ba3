"""Run the real Crossplane CLI from the conformance tests: find it, and read ``crossplane resource validate``.

``crossplane resource validate EXTENSIONS RESOURCES`` (CLI v2.5, pkg/validate)
validates each resource with the API server's own libraries
(k8s.io/apiextensions-apiserver): the OpenAPI schema, unknown fields (pruning)
and the ``x-kubernetes-validations`` CEL rules, after applying schema
defaults. It does not validate ObjectMeta (names, labels, a namespace on a
cluster-scoped kind) and does not run transition rules (no old object). With
``--output json`` it reports one entry per resource, in the order it read
them, which this module reads back into one ``Verdict`` each. (A Composition
with pipeline inputs makes the CLI validate each input too; such a report is
refused as not matching what was given.)

The CLI always adds the Crossplane image's CRDs (downloaded into its cache) to
the extensions; to stay offline, every call gets a cache directory in which
that image is already present and empty. Crossplane's CRDs come from the
shared CRDs instead, like every other schema (see ``schemas``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from modelplane.render import goyaml
from tests.conformance.schemas import CRDS_DIR
from tests.render.crossplane_cli import crossplane_binary, crossplane_engine

# Never pulled: its cache entry is created empty (see the module docstring).
OFFLINE_CROSSPLANE_IMAGE = "xpkg.crossplane.io/crossplane/crossplane:offline"
ANNOTATION_RESOURCE_NAME = "crossplane.io/composition-resource-name"
WORKERS = max(2, os.cpu_count() or 2)
# A schema's defaults that cannot be applied: the CLI reports it but validates anyway.
_DEFAULTING = "defaulting"


def in_ci() -> bool:
    """Whether this run is CI, where what is missing fails instead of skipping."""
    return bool(os.environ.get("CI"))


def _require(found: Path | None, what: str) -> Path:
    if found is not None:
        return found
    if in_ci():
        pytest.fail(f"CI is set but {what}")
    pytest.skip(f"{what}; CI requires it")


def require_binary() -> Path:
    """The Crossplane CLI; skip without it, except in CI where that is a failure."""
    what = "the Crossplane CLI is not installed (run tools/crossplane.sh, or set CROSSPLANE)"
    return _require(crossplane_binary(), what)


def require_engine() -> Path:
    """The Crossplane core binary ``crossplane render`` runs; skip without it, except in CI."""
    what = "the Crossplane render engine is not installed (run tools/crossplane.sh engine, or set CROSSPLANE_ENGINE)"
    return _require(crossplane_engine(), what)


def require_crds() -> Path:
    """The shared CRDs directory; skip without it, except in CI where that is a failure."""
    found = CRDS_DIR if CRDS_DIR.is_dir() else None
    return _require(found, f"the shared CRDs are not at {CRDS_DIR} (set MODELPLANE_CRDS)")


def run(binary: Path, *args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``crossplane ARGS...`` and capture its output."""
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd)


@dataclass(frozen=True)
class Verdict:
    """What ``crossplane resource validate`` said about one resource."""

    api_version: str
    kind: str
    name: str
    errors: tuple[str, ...]

    @property
    def gvk(self) -> str:
        """The resource's kind as Kubernetes prints a GroupVersionKind."""
        return f"{self.api_version}, Kind={self.kind}"

    @property
    def ok(self) -> bool:
        """Whether the resource validated."""
        return not self.errors


def display_name(obj: Mapping[str, Any]) -> str:
    """The name the CLI reports for ``obj``: its name, else its composition resource name."""
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or (meta.get("annotations") or {}).get(ANNOTATION_RESOURCE_NAME, ""))


Key = tuple[str, str, str]  # apiVersion, kind, name as reported


def key(obj: Mapping[str, Any]) -> Key:
    """How the CLI's report names ``obj``."""
    return str(obj.get("apiVersion", "")), str(obj.get("kind", "")), display_name(obj)


class ValidateError(RuntimeError):
    """``crossplane resource validate`` did not run to a verdict on every resource."""


def parse(stdout: str) -> list[Verdict]:
    """Read the CLI's JSON report into one verdict per resource, in order.

    Raises:
        ValidateError: The report is not JSON, or names a kind the CLI found no schema for.
    """
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError as e:
        msg = f"crossplane resource validate printed no JSON report ({e}):\n{stdout}"
        raise ValidateError(msg) from e
    out: list[Verdict] = []
    missing: list[str] = []
    for r in report.get("resources") or ():
        if r.get("status") == "missingSchema":
            missing.append(f"{r.get('apiVersion', '')}, Kind={r.get('kind', '')}")
        errors = tuple(e["message"] for e in r.get("errors") or () if e.get("type") != _DEFAULTING)
        out.append(Verdict(r.get("apiVersion", ""), r.get("kind", ""), r.get("name", ""), errors))
    if missing:
        msg = f"crossplane resource validate found no schema for: {', '.join(sorted(set(missing)))}"
        raise ValidateError(msg)
    return out


def _validate_call(
    binary: Path, extensions: Sequence[Path], objects: Sequence[Mapping[str, Any]], work: Path
) -> list[Verdict]:
    work.mkdir(parents=True)
    cache = work / "cache"
    (cache / OFFLINE_CROSSPLANE_IMAGE.replace(":", "@")).mkdir(parents=True)
    resources = work / "resources.yaml"
    resources.write_text("".join("---\n" + goyaml.dump_document(dict(o)) for o in objects))
    proc = run(
        binary,
        "resource",
        "validate",
        f"--cache-dir={cache}",
        f"--crossplane-image={OFFLINE_CROSSPLANE_IMAGE}",
        "--error-on-missing-schemas",
        "--output=json",
        ",".join(str(e) for e in extensions),
        str(resources),
    )
    # 0: every resource validated; 1 with this message: some did not. Anything else is a broken run.
    if proc.returncode != 0 and "could not validate all resources" not in proc.stderr:
        msg = f"crossplane resource validate failed ({proc.returncode}): {proc.stderr.strip()}\n{proc.stdout}"
        raise ValidateError(msg)
    verdicts = parse(proc.stdout)
    if [key(o) for o in objects] != [(v.api_version, v.kind, v.name) for v in verdicts]:
        msg = f"crossplane resource validate reported other resources than it was given:\n{proc.stdout}"
        raise ValidateError(msg)
    if (proc.returncode == 0) != all(v.ok for v in verdicts):
        msg = f"crossplane resource validate exited {proc.returncode} but reported:\n{proc.stdout}"
        raise ValidateError(msg)
    return verdicts


def resource_validate(
    binary: Path, extensions: Sequence[Path], objects: Sequence[Mapping[str, Any]], work: Path
) -> list[Verdict]:
    """Validate ``objects`` against ``extensions`` with ``crossplane resource validate``; one verdict each, in order.

    The objects are cut into one CLI call per worker, run in parallel.

    Raises:
        ValidateError: The CLI failed to run, or found no schema for some kind.
    """
    size = max(1, -(-len(objects) // WORKERS))
    chunks = [list(range(n, min(n + size, len(objects)))) for n in range(0, len(objects), size)]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [
            pool.submit(_validate_call, binary, extensions, [objects[i] for i in chunk], work / f"call-{n}")
            for n, chunk in enumerate(chunks)
        ]
        results = [f.result() for f in futures]
    return [v for verdicts in results for v in verdicts]
