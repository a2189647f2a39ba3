"""Run the real Crossplane CLI from the conformance tests: find it, and read ``crossplane beta validate``.

``crossplane beta validate EXTENSIONS RESOURCES`` (v2.2.1, cmd/crank/beta/validate)
validates each resource with the API server's own libraries
(k8s.io/apiextensions-apiserver): the OpenAPI schema, unknown fields (pruning)
and the ``x-kubernetes-validations`` CEL rules, after applying schema
defaults. It does not validate ObjectMeta (names, labels, a namespace on a
cluster-scoped kind) and does not run transition rules (no old object). It
prints one or more lines per resource, naming it by GVK and name (or, without
a name, its composition-resource-name annotation), which this module reads
back into one ``Verdict`` per resource. (A Composition with pipeline inputs
makes the CLI validate each input too; such a report is refused as not
matching what was given.)

The CLI always adds the Crossplane image's CRDs (downloaded into its cache) to
the extensions; to stay offline, every call gets a cache directory in which
that image is already present and empty. Crossplane's CRDs come from the
shared CRDs instead, like every other schema (see ``schemas``).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from modelplane.render import goyaml
from tests.conformance.openapi_crds import GVK
from tests.conformance.schemas import CRDS_DIR
from tests.render.crossplane_cli import crossplane_binary

# Never pulled: its cache entry is created empty (see the module docstring).
OFFLINE_CROSSPLANE_IMAGE = "xpkg.crossplane.io/crossplane/crossplane:offline"
ANNOTATION_RESOURCE_NAME = "crossplane.io/composition-resource-name"
WORKERS = max(2, os.cpu_count() or 2)


def in_ci() -> bool:
    """Whether this run is CI, where what is missing fails instead of skipping."""
    return bool(os.environ.get("CI"))


def require_binary() -> Path:
    """The Crossplane CLI; skip without it, except in CI where that is a failure."""
    binary = crossplane_binary()
    if binary is not None:
        return binary
    msg = "the Crossplane CLI is not installed (run tools/crossplane.sh, or set CROSSPLANE)"
    if in_ci():
        pytest.fail(f"CI is set but {msg}")
    pytest.skip(f"{msg}; CI requires it")


def require_crds() -> Path:
    """The shared CRDs directory; skip without it, except in CI where that is a failure."""
    if CRDS_DIR.is_dir():
        return CRDS_DIR
    msg = f"the shared CRDs are not at {CRDS_DIR} (set MODELPLANE_CRDS)"
    if in_ci():
        pytest.fail(f"CI is set but {msg}")
    pytest.skip(f"{msg}; CI requires them")


def run(binary: Path, *args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``crossplane ARGS...`` and capture its output."""
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd)


@dataclass(frozen=True)
class Verdict:
    """What ``crossplane beta validate`` said about one resource."""

    gvk: str
    name: str
    errors: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether the resource validated."""
        return not self.errors


def display_name(obj: Mapping[str, Any]) -> str:
    """The name the CLI prints for ``obj``: its name, else its composition resource name."""
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or (meta.get("annotations") or {}).get(ANNOTATION_RESOURCE_NAME, ""))


Key = tuple[str, str]  # (GVK as printed, name as printed)


def key(obj: Mapping[str, Any]) -> Key:
    """How the CLI's report names ``obj``."""
    return str(GVK.of(obj)), display_name(obj)


def plan(objects: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """Calls to make: indexes of ``objects`` in an order where no two neighbours share a ``key``.

    The CLI reports resources in the order it read them, one block of lines
    each, naming them only by GVK and name; with no two neighbours alike,
    its report splits back into one block per resource. Resources that
    cannot be placed so (too many alike) go to a further call.
    """
    pending: dict[Key, list[int]] = {}
    for i, obj in enumerate(objects):
        pending.setdefault(key(obj), []).append(i)
    calls: list[list[int]] = []
    while pending:
        order: list[int] = []
        previous: Key | None = None
        while True:
            # The most frequent other key first, so that the rest stays placeable.
            choices = [k for k in pending if k != previous]
            if not choices:
                break
            previous = max(choices, key=lambda k: (len(pending[k]), -pending[k][0]))
            order.append(pending[previous].pop(0))
            if not pending[previous]:
                del pending[previous]
        calls.append(order)
    return calls


_OK = re.compile(r"^\[✓\] (?P<gvk>[^,]*, Kind=[^,]*), (?P<name>.*) validated successfully$")
_ERROR = re.compile(r"^\[x\] (?:schema|CEL) validation error (?P<gvk>[^,]*, Kind=[^,]*), (?P<name>.*?) : (?P<msg>.*)$")
_MISSING = re.compile(r"^\[!\] could not find CRD/XRD for: (?P<gvk>.*)$")
_DEFAULTS = re.compile(r"^\[!\] failed to apply defaults for (?P<gvk>[^,]*, Kind=[^,]*), (?P<name>.*?): (?P<msg>.*)$")
_TOTAL = re.compile(r"^Total (?P<n>\d+) resources: (?P<missing>\d+) missing schemas, ")


class ValidateError(RuntimeError):
    """``crossplane beta validate`` did not run to a verdict on every resource."""


def parse(stdout: str) -> list[Verdict]:
    """Read the CLI's report into one verdict per block of lines about one resource, in order."""
    out: list[Verdict] = []
    errors: list[str] | None = None  # the messages of the block being read, when it is a failure
    missing: list[str] = []
    total = False
    for line in stdout.splitlines():
        if m := _OK.match(line):
            out.append(Verdict(m["gvk"], m["name"], ()))
            errors = None
        elif m := _ERROR.match(line):
            if errors is None or (out[-1].gvk, out[-1].name) != (m["gvk"], m["name"]):
                errors = []
                out.append(Verdict(m["gvk"], m["name"], ()))
            errors.append(m["msg"])
            out[-1] = Verdict(m["gvk"], m["name"], tuple(errors))
        elif m := _MISSING.match(line):
            missing.append(m["gvk"])
        elif _DEFAULTS.match(line):
            # The CLI validates anyway; a schema it cannot default from also fails validation.
            continue
        elif _TOTAL.match(line):
            total = True
        elif errors:
            errors[-1] += "\n" + line  # A message spanning lines.
            out[-1] = Verdict(out[-1].gvk, out[-1].name, tuple(errors))
        else:
            msg = f"unexpected line from crossplane beta validate: {line!r}"
            raise ValidateError(msg)
    if missing:
        msg = f"crossplane beta validate found no schema for: {', '.join(missing)}"
        raise ValidateError(msg)
    if not total:
        msg = f"crossplane beta validate printed no summary:\n{stdout}"
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
        "beta",
        "validate",
        f"--cache-dir={cache}",
        f"--crossplane-image={OFFLINE_CROSSPLANE_IMAGE}",
        "--error-on-missing-schemas",
        ",".join(str(e) for e in extensions),
        str(resources),
    )
    # 0: every resource validated; 1 with this message: some did not. Anything else is a broken run.
    if proc.returncode != 0 and "could not validate all resources" not in proc.stderr:
        msg = f"crossplane beta validate failed ({proc.returncode}): {proc.stderr.strip()}\n{proc.stdout}"
        raise ValidateError(msg)
    verdicts = parse(proc.stdout)
    if [key(o) for o in objects] != [(v.gvk, v.name) for v in verdicts]:
        msg = f"crossplane beta validate reported other resources than it was given:\n{proc.stdout}"
        raise ValidateError(msg)
    if (proc.returncode == 0) != all(v.ok for v in verdicts):
        msg = f"crossplane beta validate exited {proc.returncode} but reported:\n{proc.stdout}"
        raise ValidateError(msg)
    return verdicts


def beta_validate(
    binary: Path, extensions: Sequence[Path], objects: Sequence[Mapping[str, Any]], work: Path
) -> list[Verdict]:
    """Validate ``objects`` against ``extensions`` with ``crossplane beta validate``; one verdict each, in order.

    The objects go to as few CLI calls as keep each report unambiguous (see
    ``plan``), each cut into one call per worker, run in parallel.

    Raises:
        ValidateError: The CLI failed to run, or found no schema for some kind.
    """
    chunks = [
        order[n : n + size]
        for order in plan(objects)
        for size in [-(-len(order) // WORKERS)]
        for n in range(0, len(order), size)
    ]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [
            pool.submit(_validate_call, binary, extensions, [objects[i] for i in chunk], work / f"call-{n}")
            for n, chunk in enumerate(chunks)
        ]
        results = [f.result() for f in futures]
    out: dict[int, Verdict] = {}
    for chunk, verdicts in zip(chunks, results, strict=True):
        out.update(zip(chunk, verdicts, strict=True))
    return [out[i] for i in range(len(objects))]
