"""Find the schema of any manifest: our XRDs, the shared CRDs, or the Kubernetes OpenAPI document.

The shared CRDs are ``../shared/crds`` beside the repository, or ``$MODELPLANE_CRDS``.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not in the dev extras

from modelplane import kinds
from modelplane.admission.documents import JSON, Schema
from modelplane.admission.objects import metadata_errors
from modelplane.admission.openapi import FORMATS, fields_at, schema_error_messages
from modelplane.admission.validator import Result, Validator
from modelplane.admission.xrd import definitions
from modelplane.documents import read_all, read_one
from modelplane.repo import ROOT

CRDS_DIR = Path(os.environ.get("MODELPLANE_CRDS") or ROOT.parent / "shared" / "crds")
XRD_CRD = CRDS_DIR / "crossplane" / "crds" / "apiextensions.crossplane.io_compositeresourcedefinitions.yaml"
COMPOSITION_CRD = CRDS_DIR / "crossplane" / "crds" / "apiextensions.crossplane.io_compositions.yaml"
KUBERNETES_OPENAPI = CRDS_DIR / "kubernetes-openapi" / "swagger.json.unprocessed"


@functools.cache
def xr_validator(kind: str) -> Validator:
    """The validator of one of our kinds, built from its XRD like Crossplane builds the CRD."""
    d = definitions()[kind]
    return Validator(kind, d.crd_schema, namespaced=d.scope == "Namespaced")


def _crd_files_for_group(group: str) -> list[Path]:
    exact = sorted(CRDS_DIR.rglob(f"{group}_*.yaml"))
    return exact or sorted(CRDS_DIR.rglob("*.yaml"))


@functools.cache
def _crd_documents(path: Path) -> tuple[JSON, ...]:
    return tuple(read_all(path))


@functools.cache
def shared_crds() -> tuple[JSON, ...]:
    """Every CustomResourceDefinition in the shared CRDs."""
    return tuple(
        doc
        for path in sorted(CRDS_DIR.rglob("*.yaml"))
        for doc in _crd_documents(path)
        if doc.get("kind") == "CustomResourceDefinition"
    )


@functools.cache
def crd_validator(api_version: str, kind: str) -> Validator | None:
    """The validator for a custom resource kind whose CRD is in the shared CRDs, or None."""
    group, _, version = api_version.rpartition("/")
    if not group:
        return None
    # Later paths win: newer releases sort after older ones (e.g. v1.6.0 after v1.5.0).
    found: Validator | None = None
    for path in _crd_files_for_group(group):
        for doc in _crd_documents(path):
            if doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            if spec["group"] != group or spec["names"]["kind"] != kind:
                continue
            for v in spec["versions"]:
                if v["name"] == version and v.get("served", True):
                    found = Validator(
                        kind,
                        v["schema"]["openAPIV3Schema"],
                        namespaced=spec["scope"] == "Namespaced",
                    )
    return found


def crd_version_schema(path: Path, version: str) -> Schema:
    """The openAPIV3Schema of one version of the single CRD in ``path``."""
    crd = read_one(path)
    (v,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return dict(v["schema"]["openAPIV3Schema"])


@functools.cache
def kubernetes_openapi() -> JSON:
    """The Kubernetes OpenAPI (v2) document, with the two types that take a number or a string fixed."""
    with KUBERNETES_OPENAPI.open(encoding="utf-8") as f:
        doc = json.load(f)
    defs = doc["definitions"]
    # Both marshal from a YAML number as well as a string.
    defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {"type": ["string", "integer", "number"]}
    defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {"type": ["string", "integer"]}
    return doc


class BuiltinValidator:
    """Validates built-in kinds against the Kubernetes OpenAPI (v2) definitions; no defaults, no CEL."""

    def __init__(self, kind: str, definition: str, *, namespaced: bool) -> None:
        """Validate ``kind`` against the OpenAPI ``definition``."""
        self.kind = kind
        self.namespaced = namespaced
        doc = kubernetes_openapi()
        self.definitions: Schema = doc["definitions"]
        self.schema: Schema = self.definitions[definition]
        schema = {"$ref": f"#/definitions/{definition}", "definitions": doc["definitions"]}
        self._validator = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)

    def fields_at(self, path: Sequence[str | int]) -> list[str]:
        """The fields the schema declares for the object at ``path``."""
        return fields_at(self.schema, path, self.definitions)

    def validate(self, manifest: JSON) -> Result:
        """Every error the API server would report for ``manifest``."""
        errors = metadata_errors(manifest, namespaced=self.namespaced)
        for error in self._validator.iter_errors(manifest):
            errors.extend(schema_error_messages(error))
        return Result(object=manifest, errors=tuple(errors))


# Built-in cluster-scoped kinds an example might carry; everything else built in is namespaced.


# Built-in cluster-scoped kinds an example might carry; everything else built in is namespaced.
_CLUSTER_SCOPED_BUILTINS = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "ClusterRole",
        "ClusterRoleBinding",
        "StorageClass",
        "PriorityClass",
        "DeviceClass",
        "ResourceSlice",
        "CustomResourceDefinition",
    }
)


@functools.cache
def builtin_validator(api_version: str, kind: str) -> BuiltinValidator | None:
    """The validator for a built-in Kubernetes kind, or None."""
    if not KUBERNETES_OPENAPI.is_file():
        return None
    group, _, version = api_version.rpartition("/")
    for name, definition in kubernetes_openapi()["definitions"].items():
        for gvk in definition.get("x-kubernetes-group-version-kind", []):
            if gvk["group"] == group and gvk["version"] == version and gvk["kind"] == kind:
                return BuiltinValidator(kind, name, namespaced=kind not in _CLUSTER_SCOPED_BUILTINS)
    return None


def validate(manifest: JSON, old: JSON = None) -> Result:
    """Validate any manifest: our kinds against their XRD, others against their CRD or built-in schema.

    ``old`` is the object ``manifest`` updates (None: a create), for our kinds' transition rules.
    """
    if not isinstance(manifest, dict):
        return Result(object=manifest, errors=("<root>: Invalid value: not an object",))
    api_version = manifest.get("apiVersion")
    kind = manifest.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return Result(object=manifest, errors=("apiVersion and kind: Required value",))
    if api_version == kinds.API_VERSION:
        if kind not in definitions():
            return Result(object=manifest, errors=(f"no XRD defines {api_version} {kind}",), schema_found=False)
        return xr_validator(kind).validate(manifest, old)
    validator = validator_for(api_version, kind)
    if validator is None:
        return Result(object=manifest, errors=(f"no schema found for {api_version} {kind}",), schema_found=False)
    return validator.validate(manifest)


def validator_for(api_version: str, kind: str) -> Validator | BuiltinValidator | None:
    """The validator of any kind: our XRDs, then the shared CRDs, then the built-in kinds; None if none has it."""
    if api_version == kinds.API_VERSION:
        return xr_validator(kind) if kind in definitions() else None
    return crd_validator(api_version, kind) or builtin_validator(api_version, kind)
