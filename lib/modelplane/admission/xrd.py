"""Our XRDs, and the CRD schema Crossplane v2 generates for each (internal/xcrd)."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path

from modelplane.admission.documents import JSON, Schema
from modelplane.documents import read_one
from modelplane.repo import APIS

# Crossplane truncates XR names used as label values (internal/xcrd/crd.go).
_MAX_COMPOSITE_NAME_LENGTH = 63


@dataclass(frozen=True)
class Definition:
    """One of our XRDs as found in ``apis/<plural>/definition.yaml``."""

    kind: str
    path: Path
    xrd: JSON

    @property
    def scope(self) -> str:
        """Cluster or Namespaced."""
        return str(self.xrd["spec"].get("scope", "Namespaced"))

    @property
    def version(self) -> JSON:
        """The referenceable version (the one Crossplane composes)."""
        versions = [v for v in self.xrd["spec"]["versions"] if v.get("referenceable")]
        if len(versions) != 1:
            msg = f"{self.path}: want exactly one referenceable version, got {len(versions)}"
            raise ValueError(msg)
        return versions[0]

    @property
    def schema(self) -> Schema:
        """The openAPIV3Schema as written in the XRD."""
        return dict(self.version["schema"]["openAPIV3Schema"])

    @property
    def crd_schema(self) -> Schema:
        """The openAPIV3Schema of the CRD Crossplane generates from the XRD."""
        return xr_crd_schema(self.xrd)


def definition_paths(apis: Path = APIS) -> list[Path]:
    """Every XRD file in the repository, sorted."""
    return sorted(apis.glob("*/definition.yaml"))


@functools.cache
def definitions(apis: Path = APIS) -> dict[str, Definition]:
    """Our XRDs by kind."""
    out: dict[str, Definition] = {}
    for path in definition_paths(apis):
        xrd = read_one(path)
        kind = xrd["spec"]["names"]["kind"]
        out[kind] = Definition(kind=kind, path=path, xrd=xrd)
    return out


# --------------------------------------------------------------------------
# The CRD schema Crossplane generates for an XR (internal/xcrd in crossplane v2)


def _crossplane_spec_props(scope: str, default_update_policy: str | None) -> Schema:
    match_labels: Schema = {"type": "object", "additionalProperties": {"type": "string"}}
    ref: Schema = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    selector: Schema = {
        "type": "object",
        "required": ["matchLabels"],
        "properties": {"matchLabels": match_labels},
    }
    resource_ref_props: Schema = {
        "apiVersion": {"type": "string"},
        "name": {"type": "string"},
        "kind": {"type": "string"},
    }
    if scope != "Namespaced":
        resource_ref_props["namespace"] = {"type": "string"}
    update_policy: Schema = {"type": "string", "enum": ["Automatic", "Manual"]}
    if default_update_policy is not None:
        update_policy["default"] = default_update_policy
    props: Schema = {
        "compositionRef": copy.deepcopy(ref),
        "compositionSelector": copy.deepcopy(selector),
        "compositionRevisionRef": copy.deepcopy(ref),
        "compositionRevisionSelector": copy.deepcopy(selector),
        "compositionUpdatePolicy": update_policy,
        "resourceRefs": {
            "type": "array",
            "x-kubernetes-list-type": "atomic",
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind"],
                "properties": resource_ref_props,
            },
        },
    }
    return {
        "crossplane": {
            "type": "object",
            "description": "Configures how Crossplane will reconcile this composite resource",
            "properties": props,
        }
    }


def _crossplane_status_props() -> Schema:
    return {
        "conditions": {
            "description": "Conditions of the resource.",
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": {
                "type": "object",
                "required": ["lastTransitionTime", "reason", "status", "type"],
                "properties": {
                    "lastTransitionTime": {"type": "string", "format": "date-time"},
                    "message": {"type": "string"},
                    "reason": {"type": "string"},
                    "status": {"type": "string"},
                    "type": {"type": "string"},
                    "observedGeneration": {"type": "integer", "format": "int64"},
                },
            },
        },
        "crossplane": {
            "type": "object",
            "description": "Indicates how Crossplane is reconciling this composite resource",
            "properties": {
                "connectionDetails": {
                    "type": "object",
                    "properties": {"lastPublishedTime": {"type": "string", "format": "date-time"}},
                }
            },
        },
    }


def xr_crd_schema(xrd: JSON) -> Schema:
    """Return the openAPIV3Schema Crossplane v2 generates for an XRD's referenceable version.

    Mirrors ``genCrdVersion`` and ``ForCompositeResource``: only ``spec`` and
    ``status`` of the XRD's schema survive (with their required fields, CEL
    rules, oneOf and preserve-unknown-fields); ``metadata.name`` is capped at 63
    characters; Crossplane's own ``spec.crossplane`` and ``status`` fields are
    merged in, overriding anything of the same name.
    """
    spec = xrd["spec"]
    scope = spec.get("scope", "Namespaced")
    (version,) = [v for v in spec["versions"] if v.get("referenceable")]
    s = copy.deepcopy(version["schema"]["openAPIV3Schema"])
    xspec: Schema = s.get("properties", {}).get("spec", {})
    xstatus: Schema = s.get("properties", {}).get("status", {})

    max_len = _MAX_COMPOSITE_NAME_LENGTH
    old = s.get("properties", {}).get("metadata", {}).get("properties", {}).get("name", {})
    if "maxLength" in old and old["maxLength"] < max_len:
        max_len = old["maxLength"]

    cspec: Schema = {"type": "object", "properties": {}}
    for key in ("required", "x-kubernetes-validations", "oneOf"):
        if key in xspec:
            cspec[key] = xspec[key]
    if "x-kubernetes-preserve-unknown-fields" in xspec:
        cspec["x-kubernetes-preserve-unknown-fields"] = xspec["x-kubernetes-preserve-unknown-fields"]
    if "description" in xspec:
        cspec["description"] = xspec["description"]
    cspec["properties"].update(xspec.get("properties", {}))
    cspec["properties"].update(_crossplane_spec_props(scope, spec.get("defaultCompositionUpdatePolicy", "Automatic")))

    cstatus: Schema = {"type": "object", "properties": {}}
    for key in ("required", "x-kubernetes-validations", "oneOf", "description"):
        if key in xstatus:
            cstatus[key] = xstatus[key]
    cstatus["properties"].update(xstatus.get("properties", {}))
    cstatus["properties"].update(_crossplane_status_props())

    out: Schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": max_len}},
            },
            "spec": cspec,
            "status": cstatus,
        },
    }
    if "description" in s:
        out["description"] = s["description"]
    return out
