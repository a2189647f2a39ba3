"""Find the real schema of every kind we compose, and lay them out for ``crossplane resource validate``.

A kind's schema comes from, in this order:

1. ``apis/`` when it is a Modelplane kind (the CLI turns our XRDs into CRDs);
2. the shared CRDs (``../shared/crds``: provider-kubernetes, provider-helm,
   KServe, LWS, KAI, Kueue, Gateway API, Envoy Gateway, KEDA, the Upbound
   providers, Crossplane, ...), one CRD file per group and kind;
3. the Kubernetes OpenAPI document, converted by ``openapi_crds`` for
   built-in kinds;
4. a stand-in CRD in ``standin_crds/`` for a kind whose real CRD is not
   available (cert-manager): the documented fields modelplane writes, and why
   the stand-in exists, in the file.

A kind found nowhere is a ``MissingSchemaError``, never a silent skip.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane import kinds
from modelplane.admission.catalog import validate
from modelplane.admission.validator import Validator
from tests.conformance import openapi_crds
from tests.conformance.openapi_crds import GVK

REPO = Path(__file__).resolve().parents[2]
APIS = REPO / "apis"
# CI checks out the repository with ../shared beside it (see .ci/run).
CRDS_DIR = Path(os.environ.get("MODELPLANE_CRDS") or REPO.parent / "shared" / "crds")
KUBERNETES_OPENAPI = CRDS_DIR / "kubernetes-openapi" / "swagger.json.unprocessed"
STANDIN_CRDS_DIR = Path(__file__).resolve().parent / "standin_crds"

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class MissingSchemaError(LookupError):
    """No XRD, CRD or OpenAPI definition exists for some kinds."""


@dataclass(frozen=True)
class SharedCRD:
    """One CRD of the shared CRDs."""

    path: Path
    group: str
    kind: str

    @property
    def versions(self) -> tuple[str, ...]:
        """The served versions."""
        return _served_versions(self.path, self.group, self.kind)


# The layout controller-gen writes (spec.group, then spec.names.kind): enough
# to index a file without parsing it; any other layout is parsed.
_CRD_HEADER = re.compile(r"^kind: CustomResourceDefinition$", re.MULTILINE)
_GROUP = re.compile(r"^  group: ([A-Za-z0-9.-]+)$", re.MULTILINE)
_NAMES_KIND = re.compile(r"^  names:\n(?:    .*\n)*?    kind: ([A-Za-z0-9]+)$", re.MULTILINE)


def _load(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as f:
        return [d for d in yaml.load_all(f, Loader=_LOADER) if d]


def _group_kinds(path: Path) -> list[tuple[str, str]]:
    text = path.read_text(encoding="utf-8")
    groups, kinds_ = _GROUP.findall(text), _NAMES_KIND.findall(text)
    if len(_CRD_HEADER.findall(text)) == len(groups) == len(kinds_) == 1:
        return [(groups[0], kinds_[0])]
    return [
        (str(d["spec"]["group"]), str(d["spec"]["names"]["kind"]))
        for d in _load(path)
        if d.get("kind") == "CustomResourceDefinition"
    ]


@functools.cache
def _served_versions(path: Path, group: str, kind: str) -> tuple[str, ...]:
    for d in _load(path):
        spec = d.get("spec") or {}
        if spec.get("group") == group and (spec.get("names") or {}).get("kind") == kind:
            return tuple(str(v["name"]) for v in spec.get("versions") or () if v.get("served"))
    msg = f"{path} does not define {kind}.{group}"
    raise LookupError(msg)


@functools.cache
def shared_crds(root: Path = CRDS_DIR) -> dict[tuple[str, str], SharedCRD]:
    """Every CRD under ``root`` by (group, kind); two files defining one kind is an error."""
    out: dict[tuple[str, str], SharedCRD] = {}
    for path in sorted(root.rglob("*.yaml")):
        for key in _group_kinds(path):
            if key in out:
                msg = f"{key[1]}.{key[0]} is defined twice: {out[key].path} and {path}"
                raise ValueError(msg)
            out[key] = SharedCRD(path=path, group=key[0], kind=key[1])
    return out


@functools.cache
def _xrd_versions() -> dict[str, tuple[str, ...]]:
    """Served versions of each Modelplane kind, from apis/*/definition.yaml."""
    out: dict[str, tuple[str, ...]] = {}
    for path in sorted(APIS.glob("*/definition.yaml")):
        (xrd,) = _load(path)
        served = tuple(str(v["name"]) for v in xrd["spec"]["versions"] if v.get("served"))
        out[str(xrd["spec"]["names"]["kind"])] = served
    return out


def source(gvk: GVK) -> str:
    """Where the schema of ``gvk`` comes from: ``apis``, a shared CRD folder, or ``kubernetes-openapi``."""
    if gvk.group == kinds.GROUP:
        if gvk.version in _xrd_versions().get(gvk.kind, ()):
            return "apis"
    else:
        crd = shared_crds().get((gvk.group, gvk.kind))
        if crd is not None and gvk.version in crd.versions:
            return crd.path.relative_to(CRDS_DIR).parts[0]
        if KUBERNETES_OPENAPI.is_file() and openapi_crds.load(KUBERNETES_OPENAPI).has(gvk):
            return "kubernetes-openapi"
        standin = shared_crds(STANDIN_CRDS_DIR).get((gvk.group, gvk.kind))
        if standin is not None and gvk.version in standin.versions:
            return "stand-in"
    msg = f"no schema for {gvk}: not a Modelplane XRD, not among the CRDs in {CRDS_DIR}, not a built-in kind"
    raise MissingSchemaError(msg)


def extensions(objects: Iterable[Mapping[str, Any]], dest: Path) -> list[Path]:
    """The extension sources ``crossplane resource validate`` needs for ``objects``.

    Writes into ``dest`` (a fresh directory) a symlink to each shared CRD file
    and a converted CRD for each built-in kind the objects use, and returns
    the list to pass to the CLI (``apis/`` first).

    Raises:
        MissingSchemaError: Some kinds have no schema anywhere.
    """
    dest.mkdir(parents=True, exist_ok=True)
    gvks = sorted({GVK.of(o) for o in objects}, key=str)
    missing: list[str] = []
    builtin: dict[tuple[str, str], list[str]] = {}
    for gvk in gvks:
        try:
            where = source(gvk)
        except MissingSchemaError:
            missing.append(str(gvk))
            continue
        if where == "kubernetes-openapi":
            builtin.setdefault((gvk.group, gvk.kind), []).append(gvk.version)
        elif where != "apis":
            crd = (shared_crds(STANDIN_CRDS_DIR) if where == "stand-in" else shared_crds())[(gvk.group, gvk.kind)]
            link = dest / f"{crd.group}_{crd.kind}.yaml"
            if not link.exists():
                link.symlink_to(crd.path)
    if missing:
        msg = f"no schema (XRD, shared CRD or built-in kind) for: {', '.join(missing)}"
        raise MissingSchemaError(msg)
    if builtin:
        doc = openapi_crds.load(KUBERNETES_OPENAPI)
        for (group, kind), versions in sorted(builtin.items()):
            definition = doc.crd(group, kind, versions)
            # JSON is YAML, and much faster to write than a YAML dump of a large schema.
            (dest / openapi_crds.file_name(group, kind)).write_text(json.dumps(definition))
    return [APIS, dest]


@functools.cache
def standin_validator(api_version: str, kind: str) -> Validator | None:
    """The admission validator of a kind that only a stand-in CRD (``standin_crds/``) describes, or None."""
    group, _, version = api_version.rpartition("/")
    crd = shared_crds(STANDIN_CRDS_DIR).get((group, kind))
    if crd is None:
        return None
    for doc in _load(crd.path):
        spec = doc.get("spec") or {}
        if spec.get("group") != group or (spec.get("names") or {}).get("kind") != kind:
            continue
        for v in spec.get("versions") or ():
            if v.get("name") == version and v.get("served", True):
                return Validator(kind, v["schema"]["openAPIV3Schema"], namespaced=spec.get("scope") == "Namespaced")
    return None


def validate_any(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The admission errors of ``manifest``: by its real schema, or by its stand-in CRD when it has only that."""
    standin = standin_validator(str(manifest.get("apiVersion", "")), str(manifest.get("kind", "")))
    result = standin.validate(dict(manifest)) if standin is not None else validate(dict(manifest))
    return tuple(result.errors)
