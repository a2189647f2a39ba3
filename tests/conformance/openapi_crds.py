"""Turn built-in Kubernetes kinds of the OpenAPI v2 document into CRDs ``crossplane resource validate`` reads.

``crossplane resource validate`` only knows CRDs and XRDs; the schemas of built-in
kinds (Namespace, Service, Deployment, resource.k8s.io ResourceClaimTemplate,
...) come from the Kubernetes OpenAPI document instead
(``kubernetes-openapi/swagger.json.unprocessed`` of the shared CRDs, Swagger
2.0). For each requested group/version/kind this writes a
``CustomResourceDefinition`` whose ``openAPIV3Schema`` is the kind's definition
with every ``$ref`` inlined and the API machinery types given the schemas a CRD
uses for them:

- ``IntOrString`` and ``Quantity`` accept integers and strings
  (``x-kubernetes-int-or-string``, as controller-gen writes them; a Quantity
  also gets the pattern the API server's parser accepts);
- ``RawExtension``, ``FieldsV1``, ``Patch``, ``JSON`` and the recursive
  ``JSONSchemaProps`` family keep unknown fields; any other cycle is cut there
  the same way;
- the root ``metadata`` is ``type: object`` as in every CRD (the API server
  validates ObjectMeta itself, and so does not the CLI); nested ObjectMeta
  (pod templates) keeps its full schema;
- descriptions and the patch-strategy and union extensions are dropped; the
  list and map extensions are kept.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Schema = dict[str, Any]

_REF_PREFIX = "#/definitions/"
_META = "io.k8s.apimachinery.pkg"
_APIEXT = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"

# The pattern controller-gen gives resource.Quantity fields.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_INT_OR_STRING: Schema = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
_PRESERVE: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_ANY: Schema = {"x-kubernetes-preserve-unknown-fields": True}

SPECIAL: dict[str, Schema] = {
    f"{_META}.util.intstr.IntOrString": _INT_OR_STRING,
    f"{_META}.api.resource.Quantity": {**_INT_OR_STRING, "pattern": QUANTITY_PATTERN},
    f"{_META}.runtime.RawExtension": _PRESERVE,
    f"{_META}.apis.meta.v1.FieldsV1": _PRESERVE,
    f"{_META}.apis.meta.v1.Patch": _PRESERVE,
    f"{_APIEXT}.JSON": _ANY,
    f"{_APIEXT}.JSONSchemaPropsOrArray": _ANY,
    f"{_APIEXT}.JSONSchemaPropsOrBool": _ANY,
    f"{_APIEXT}.JSONSchemaPropsOrStringArray": _ANY,
}

# Keys of a Swagger schema that mean the same in a CRD's openAPIV3Schema.
_KEPT = (
    "type",
    "format",
    "enum",
    "required",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)


@dataclass(frozen=True)
class GVK:
    """A group, version and kind; the core group is ``""``."""

    group: str
    version: str
    kind: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> GVK:
        """The GVK of a manifest from its ``apiVersion`` and ``kind``."""
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        return cls(group, version, str(obj.get("kind", "")))

    def __str__(self) -> str:
        """As Kubernetes prints it: ``group/version, Kind=kind``."""
        return f"{self.group}/{self.version}, Kind={self.kind}"


class UnknownKindError(LookupError):
    """The OpenAPI document has no definition for a group/version/kind."""


@dataclass(frozen=True)
class _Resource:
    plural: str
    namespaced: bool


class OpenAPI:
    """The definitions of one Swagger 2.0 document, indexed by GVK."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self._defs: Mapping[str, Schema] = doc.get("definitions") or {}
        self._by_gvk: dict[GVK, str] = {}
        for name, d in sorted(self._defs.items()):
            for g in d.get("x-kubernetes-group-version-kind") or ():
                self._by_gvk.setdefault(GVK(g.get("group", ""), g["version"], g["kind"]), name)
        self._resources = _resources(doc.get("paths") or {})

    def has(self, gvk: GVK) -> bool:
        """Whether the document defines ``gvk``."""
        return gvk in self._by_gvk

    def schema(self, gvk: GVK) -> Schema:
        """The openAPIV3Schema of ``gvk`` as a CRD version carries it."""
        name = self._by_gvk.get(gvk)
        if name is None:
            msg = f"the Kubernetes OpenAPI document defines no {gvk}"
            raise UnknownKindError(msg)
        root = self._convert(self._defs[name], (name,))
        props = root.setdefault("properties", {})
        props["apiVersion"] = {"type": "string"}
        props["kind"] = {"type": "string"}
        if "metadata" in props:
            props["metadata"] = {"type": "object"}
        return root

    def crd(self, group: str, kind: str, versions: Iterable[str]) -> Schema:
        """A CustomResourceDefinition serving ``versions`` of ``group``/``kind`` (the first is the storage one)."""
        gvks = [GVK(group, v, kind) for v in versions]
        res = next((self._resources[g] for g in gvks if g in self._resources), None)
        if res is None:
            res = _Resource(plural=f"{kind.lower()}s", namespaced=True)
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{res.plural}.{group or 'core'}"},
            "spec": {
                "group": group,
                "names": {"kind": kind, "listKind": f"{kind}List", "plural": res.plural, "singular": kind.lower()},
                "scope": "Namespaced" if res.namespaced else "Cluster",
                "versions": [
                    {
                        "name": g.version,
                        "served": True,
                        "storage": i == 0,
                        "schema": {"openAPIV3Schema": self.schema(g)},
                    }
                    for i, g in enumerate(gvks)
                ],
            },
        }

    def _ref(self, ref: str, seen: tuple[str, ...]) -> Schema:
        name = ref.removeprefix(_REF_PREFIX)
        if name in SPECIAL:
            return dict(SPECIAL[name])
        if name in seen:
            return dict(_PRESERVE)
        return self._convert(self._defs[name], (*seen, name))

    def _convert(self, node: Mapping[str, Any], seen: tuple[str, ...]) -> Schema:
        if "$ref" in node:
            return self._ref(str(node["$ref"]), seen)
        out: Schema = {k: node[k] for k in _KEPT if k in node}
        if "properties" in node:
            out["properties"] = {k: self._convert(v, seen) for k, v in node["properties"].items()}
        if "items" in node:
            out["items"] = self._convert(node["items"], seen)
        if isinstance(node.get("additionalProperties"), Mapping):
            out["additionalProperties"] = self._convert(node["additionalProperties"], seen)
        if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
            # An empty struct: the API server's strict decoding refuses any field in it.
            out["properties"] = {}
        return out


def _resources(paths: Mapping[str, Any]) -> dict[GVK, _Resource]:
    """Plural and scope of every creatable kind, from its POST path."""
    out: dict[GVK, _Resource] = {}
    for path, item in sorted(paths.items()):
        post = item.get("post") if isinstance(item, Mapping) else None
        if not isinstance(post, Mapping) or "x-kubernetes-group-version-kind" not in post:
            continue
        segments = path.strip("/").split("/")
        if "{name}" in segments:
            continue  # A subresource (pods/{name}/binding, ...).
        g = post["x-kubernetes-group-version-kind"]
        gvk = GVK(g.get("group", ""), g["version"], g["kind"])
        out.setdefault(gvk, _Resource(plural=segments[-1], namespaced="{namespace}" in segments))
    return out


@functools.cache
def load(path: Path) -> OpenAPI:
    """The OpenAPI document at ``path``, read once."""
    return OpenAPI(json.loads(path.read_text(encoding="utf-8")))


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def file_name(group: str, kind: str) -> str:
    """A file name for the CRD of ``group``/``kind``."""
    return _UNSAFE.sub("_", f"builtin_{group or 'core'}_{kind}.yaml")
