"""The OpenAPI v2 → CRD converter for built-in kinds (openapi_crds.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import openapi_crds
from tests.conformance.cli import require_crds
from tests.conformance.openapi_crds import GVK, OpenAPI, UnknownKindError
from tests.conformance.schemas import KUBERNETES_OPENAPI

_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _doc() -> dict[str, Any]:
    return {
        "definitions": {
            _META: {
                "type": "object",
                "description": "metadata",
                "properties": {
                    "name": {"type": "string"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
            "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
            "t.Node": {
                "type": "object",
                "properties": {"child": _ref("t.Node"), "v": {"type": "integer", "format": "int32"}},
            },
            "t.Empty": {"type": "object", "description": "no fields"},
            "t.Template": {"type": "object", "properties": {"metadata": _ref(_META)}},
            "t.WidgetSpec": {
                "type": "object",
                "required": ["port"],
                "properties": {
                    "port": _ref("io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
                    "size": _ref("io.k8s.apimachinery.pkg.api.resource.Quantity"),
                    "tree": _ref("t.Node"),
                    "empty": _ref("t.Empty"),
                    "template": _ref("t.Template"),
                    "items": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "x-kubernetes-patch-strategy": "merge",
                        "x-kubernetes-patch-merge-key": "name",
                    },
                    "mode": {"type": "string", "enum": ["A", "B"]},
                },
            },
            "t.Widget": {
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": "example.org", "kind": "Widget", "version": "v1"}],
                "properties": {
                    "apiVersion": {"type": "string", "description": "x"},
                    "kind": {"type": "string"},
                    "metadata": _ref(_META),
                    "spec": _ref("t.WidgetSpec"),
                },
            },
            "t.Gadget": {
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "Gadget", "version": "v1"}],
                "properties": {"metadata": _ref(_META)},
            },
        },
        "paths": {
            "/apis/example.org/v1/namespaces/{namespace}/widgets": {
                "post": {"x-kubernetes-group-version-kind": {"group": "example.org", "kind": "Widget", "version": "v1"}}
            },
            "/apis/example.org/v1/namespaces/{namespace}/widgets/{name}/scale": {
                "post": {"x-kubernetes-group-version-kind": {"group": "example.org", "kind": "Widget", "version": "v1"}}
            },
            "/api/v1/gadgets": {
                "post": {"x-kubernetes-group-version-kind": {"group": "", "kind": "Gadget", "version": "v1"}}
            },
        },
    }


def _spec_props() -> dict[str, Any]:
    props: dict[str, Any] = OpenAPI(_doc()).schema(GVK("example.org", "v1", "Widget"))["properties"]["spec"][
        "properties"
    ]
    return props


@pytest.mark.parametrize(
    ("field", "want"),
    [
        pytest.param(
            "port",
            {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
            id="int-or-string",
        ),
        pytest.param(
            "size",
            {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
                "pattern": openapi_crds.QUANTITY_PATTERN,
            },
            id="quantity",
        ),
        pytest.param(
            "tree",
            {
                "type": "object",
                "properties": {
                    "child": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "v": {"type": "integer", "format": "int32"},
                },
            },
            id="recursion-cut",
        ),
        pytest.param("empty", {"type": "object", "properties": {}}, id="empty-struct-refuses-fields"),
        pytest.param(
            "template",
            {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        },
                    }
                },
            },
            id="nested-object-meta-kept",
        ),
        pytest.param(
            "items",
            {
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            },
            id="list-extensions-kept-patch-strategy-dropped",
        ),
        pytest.param("mode", {"type": "string", "enum": ["A", "B"]}, id="enum"),
    ],
)
def test_field_schema(field: str, want: dict[str, Any]) -> None:
    assert _spec_props()[field] == want


def test_root() -> None:
    root = OpenAPI(_doc()).schema(GVK("example.org", "v1", "Widget"))
    assert root["properties"]["metadata"] == {"type": "object"}
    assert root["properties"]["apiVersion"] == {"type": "string"}
    assert root["properties"]["spec"]["required"] == ["port"]
    assert "x-kubernetes-group-version-kind" not in root
    assert "description" not in str(root)


@pytest.mark.parametrize(
    ("group", "kind", "name", "plural", "scope"),
    [
        pytest.param("example.org", "Widget", "widgets.example.org", "widgets", "Namespaced", id="namespaced"),
        pytest.param("", "Gadget", "gadgets.core", "gadgets", "Cluster", id="core-cluster-scoped"),
    ],
)
def test_crd(group: str, kind: str, name: str, plural: str, scope: str) -> None:
    crd = OpenAPI(_doc()).crd(group, kind, ["v1"])
    assert crd["metadata"]["name"] == name
    assert crd["spec"]["group"] == group
    assert crd["spec"]["names"]["plural"] == plural
    assert crd["spec"]["scope"] == scope
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)


def test_unknown_kind() -> None:
    with pytest.raises(UnknownKindError, match=r"example\.org/v2, Kind=Widget"):
        OpenAPI(_doc()).schema(GVK("example.org", "v2", "Widget"))


def _has_ref(node: Any) -> bool:
    """Whether a reference is left anywhere (JSONSchemaProps has a *property* named $ref, whose value is a schema)."""
    if isinstance(node, dict):
        return isinstance(node.get("$ref"), str) or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


@pytest.mark.parametrize(
    "gvk",
    [
        pytest.param(GVK("", "v1", "Namespace"), id="namespace"),
        pytest.param(GVK("", "v1", "Service"), id="service"),
        pytest.param(GVK("apps", "v1", "Deployment"), id="deployment"),
        pytest.param(GVK("resource.k8s.io", "v1", "ResourceClaimTemplate"), id="resourceclaimtemplate"),
        pytest.param(GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition"), id="recursive-jsonschemaprops"),
    ],
)
def test_real_document(gvk: GVK) -> None:
    require_crds()
    doc = openapi_crds.load(KUBERNETES_OPENAPI)
    crd = doc.crd(gvk.group, gvk.kind, [gvk.version])
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["type"] == "object"
    assert not _has_ref(schema)
    assert crd["spec"]["scope"] == (
        "Cluster" if gvk.kind in {"Namespace", "CustomResourceDefinition"} else "Namespaced"
    )
