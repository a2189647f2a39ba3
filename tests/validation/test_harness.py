"""The validation harness itself refuses what the API server refuses (so the other tests can fail)."""

from __future__ import annotations

from typing import Any

import pytest
import xrds

_POOL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
                "size": {"type": "integer", "minimum": 1},
                "memory": {"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+Gi$"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "note": {"type": "string", "nullable": True},
                "opts": {"type": "object", "default": {}, "properties": {"on": {"type": "boolean", "default": True}}},
                "pools": {
                    "type": "array",
                    "maxItems": 4,
                    "x-kubernetes-validations": [
                        {"rule": "self.all(a, self.exists_one(b, b.name == a.name))", "message": "names unique"}
                    ],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "x-kubernetes-validations": [
                            {"rule": "!has(self.min) || self.min <= self.max", "message": "min above max"}
                        ],
                        "properties": {
                            "name": {"type": "string"},
                            "min": {"type": "integer"},
                            "max": {"type": "integer", "default": 10},
                        },
                    },
                },
                "labels": {
                    "type": "object",
                    "maxProperties": 4,
                    "additionalProperties": {
                        "type": "string",
                        "x-kubernetes-validations": [{"rule": "self != 'bad'", "message": "no bad labels"}],
                    },
                },
                "ratio": {
                    "type": "number",
                    "x-kubernetes-validations": [{"rule": "self > 0.5", "message": "ratio too small"}],
                },
                "broken": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "x-kubernetes-validations": [{"rule": "self.missing == 1", "message": "never"}],
                },
                "keyed": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["k"],
                    "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}},
                },
            },
        }
    },
}


def _obj(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x.io/v1", "kind": "Pool", "metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param({}, [], id="empty-is-valid"),
        pytest.param(
            {"mode": "C"}, ['spec.mode: Unsupported value: "C"', "some validation rules were not checked"], id="enum"
        ),
        pytest.param({"size": 0}, ["spec.size in body should be greater than or equal to 1"], id="minimum"),
        pytest.param({"memory": 80}, [], id="int-or-string-int"),
        pytest.param({"memory": "80GB"}, ["spec.memory in body should match"], id="int-or-string-pattern"),
        pytest.param(
            {"memory": True},
            ["spec.memory in body must be of type integer or string", "were not checked"],
            id="int-or-string-type",
        ),
        pytest.param({"extra": {"anything": [1]}}, [], id="preserve-unknown-fields"),
        pytest.param({"note": None}, [], id="nullable"),
        pytest.param({"size": None}, [], id="null-pruned"),
        pytest.param({"typo": 1}, ['spec.typo: unknown field "spec.typo"'], id="unknown-field"),
        pytest.param(
            {"opts": {"on": "yes"}}, ["spec.opts.on in body must be of type boolean", "were not checked"], id="type"
        ),
        pytest.param(
            {"pools": [{"name": "a"}, {"name": "a"}]},
            ['spec.pools: Invalid value: "array": names unique'],
            id="list-rule",
        ),
        pytest.param(
            {"pools": [{"name": "a", "min": 1}, {"name": "b", "min": 11}]},
            ['spec.pools[1]: Invalid value: "object": min above max'],
            id="item-rule-after-defaults",
        ),
        pytest.param(
            {"pools": [{}]},
            ["spec.pools[0].name: Required value", "some validation rules were not checked"],
            id="required-blocks-cel",
        ),
        pytest.param(
            {"pools": [{"name": str(i)} for i in range(5)]},
            ["spec.pools: Too many: 5", "were not checked"],
            id="max-items",
        ),
        pytest.param(
            {"labels": {"a": "ok", "b": "bad"}},
            ['spec.labels.b: Invalid value: "string": no bad labels'],
            id="map-value-rule",
        ),
        pytest.param({"ratio": 1}, [], id="number-rule-with-int"),
        pytest.param({"ratio": 0.25}, ["ratio too small"], id="number-rule"),
        pytest.param({"broken": {}}, ["could not be evaluated"], id="evaluation-error"),
        pytest.param({"keyed": [{"k": "a"}, {"k": "a"}]}, ["spec.keyed[1]: Duplicate value"], id="list-map-keys"),
    ],
)
def test_validator(spec: dict[str, Any], want: list[str]) -> None:
    result = xrds.Validator("Pool", _POOL, namespaced=False).validate(_obj(**spec))
    assert len(result.errors) == len(want), result.errors
    for fragment, error in zip(want, result.errors, strict=True):
        assert fragment in error


def test_defaults_are_applied_before_rules() -> None:
    result = xrds.Validator("Pool", _POOL, namespaced=False).validate(_obj(pools=[{"name": "a"}], note=None))
    assert result.object["spec"] == {
        "mode": "A",
        "note": None,  # nullable: kept
        "opts": {"on": True},
        "pools": [{"name": "a", "max": 10}],
    }
    evaluated = {(e.rule.path, e.field) for e in result.evaluations}
    assert evaluated == {("spec.pools", "spec.pools"), ("spec.pools[*]", "spec.pools[0]")}


@pytest.mark.parametrize(
    ("metadata", "namespaced", "want"),
    [
        pytest.param({"name": "ok", "labels": {"a.io/b": "c"}}, False, [], id="valid"),
        pytest.param({}, False, ["metadata.name: Required value"], id="no-name"),
        pytest.param({"name": "Upper"}, False, ["RFC 1123 subdomain"], id="bad-name"),
        # The API server drops a namespace on a cluster-scoped kind (the e2e tier's finding).
        pytest.param({"name": "a", "namespace": "x"}, False, [], id="namespace-on-cluster-kind"),
        pytest.param({"name": "a", "namespace": "x"}, True, [], id="namespace-on-namespaced-kind"),
        pytest.param({"name": "a", "labels": {"a b": "c"}}, False, ["name part"], id="bad-label-key"),
        pytest.param({"name": "a", "labels": {"a": "-c"}}, False, ["a valid label must be"], id="bad-label-value"),
        pytest.param({"name": "a", "labels": {"a": "c" * 64}}, False, ["no more than 63"], id="label-value-too-long"),
    ],
)
def test_metadata_errors(metadata: dict[str, Any], namespaced: bool, want: list[str]) -> None:
    errors = xrds.metadata_errors({"metadata": metadata}, namespaced=namespaced)
    assert len(errors) == len(want), errors
    for fragment, error in zip(want, errors, strict=True):
        assert fragment in error


@pytest.mark.parametrize(
    ("schema", "want"),
    [
        pytest.param({"type": "object", "properties": {"a": {"type": "string"}}}, [], id="structural"),
        pytest.param({"type": "object", "properties": {"a": {}}}, ["a: type must be set"], id="no-type"),
        pytest.param(
            {"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": True}}}, [], id="int-or-string"
        ),
        pytest.param(
            {"type": "object", "additionalProperties": False},
            ["additionalProperties cannot be false"],
            id="additional-false",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "string"}, "uniqueItems": True}, ["uniqueItems"], id="unique-items"
        ),
        pytest.param({"type": "array"}, ["items must be a schema"], id="array-without-items"),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "integer", "minimum": 1, "default": 0}}},
            ["a: default: <root>: Invalid value: 0: <root> in body should be greater than or equal to 1"],
            id="invalid-default",
        ),
        pytest.param(
            {"type": "object", "anyOf": [{"properties": {"b": {"type": "string"}}}]},
            ["property 'b' must also be specified outside the junctor"],
            id="junctor-property",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "string", "$ref": "#/x"}}},
            ["a: $ref is not allowed"],
            id="ref",
        ),
    ],
)
def test_structural_errors(schema: dict[str, Any], want: list[str]) -> None:
    errors = xrds.structural_errors(schema)
    assert len(errors) == len(want), errors
    for fragment, error in zip(want, errors, strict=True):
        assert fragment in error


def test_missing_descriptions() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "description": "A."},
            "b": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "string"}}}},
        },
    }
    assert xrds.missing_descriptions(schema) == ["b", "b[*].c"]


def test_unbounded_collections() -> None:
    assert xrds.unbounded_collections(_POOL) == []
    schema = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.items.all(i, i.tags.size() < 3)", "message": "m"}],
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
                },
            },
            "other": {"type": "array", "items": {"type": "string"}},
        },
    }
    assert xrds.unbounded_collections(schema) == ["items", "items[*].tags"]


def test_printer_column_errors() -> None:
    schema = xrds.xr_crd_schema(
        {
            "spec": {
                "scope": "Cluster",
                "versions": [{"name": "v1", "referenceable": True, "schema": {"openAPIV3Schema": _POOL}}],
            }
        }
    )
    columns = [
        {"name": "MODE", "type": "string", "jsonPath": ".spec.mode"},
        {"name": "FIRST", "type": "string", "jsonPath": ".spec.pools[0].name"},
        {"name": "READY", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Ready')].status"},
        {"name": "SIZE", "type": "string", "jsonPath": ".spec.size"},
        {"name": "GONE", "type": "string", "jsonPath": ".spec.gone"},
    ]
    assert xrds.printer_column_errors(schema, columns) == [
        "column SIZE: type string does not fit .spec.size (integer)",
        "column GONE: .spec.gone names no field of the schema",
    ]


def test_xr_crd_schema_is_what_crossplane_generates() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "true", "message": "dropped by Crossplane"}],
        "properties": {
            "spec": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}},
            "status": {"type": "object", "properties": {"b": {"type": "string"}}},
        },
    }
    xrd = {
        "spec": {
            "scope": "Namespaced",
            "versions": [{"name": "v1", "referenceable": True, "schema": {"openAPIV3Schema": schema}}],
        }
    }
    out = xrds.xr_crd_schema(xrd)
    assert "x-kubernetes-validations" not in out
    assert out["required"] == ["spec"]
    assert out["properties"]["metadata"]["properties"]["name"]["maxLength"] == 63
    assert out["properties"]["spec"]["required"] == ["a"]
    crossplane = out["properties"]["spec"]["properties"]["crossplane"]["properties"]
    assert crossplane["compositionUpdatePolicy"]["default"] == "Automatic"
    assert "namespace" not in crossplane["resourceRefs"]["items"]["properties"]
    assert set(out["properties"]["status"]["properties"]) == {"b", "conditions", "crossplane"}


@pytest.mark.parametrize(
    ("rule", "want"),
    [
        pytest.param("has(self.a) && self.b.all(x, x.matches('^f(o)+$'))", {"has", "all", "matches"}, id="macros"),
        pytest.param("self.name.lowerAscii() == 'x(y)'", {"lowerAscii"}, id="kubernetes-library"),
        pytest.param("size(self) > 0", {"size"}, id="function"),
    ],
)
def test_rule_function_names(rule: str, want: set[str]) -> None:
    assert xrds.rule_function_names(rule) == want


def test_unknown_kind_has_no_schema() -> None:
    result = xrds.validate({"apiVersion": "nowhere.example.com/v1", "kind": "Thing", "metadata": {"name": "t"}})
    assert result.errors == ("no schema found for nowhere.example.com/v1 Thing",)


@pytest.mark.parametrize(
    ("manifest", "want"),
    [
        pytest.param(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "s", "namespace": "n"},
                "stringData": {"kubeconfig": "x"},
            },
            [],
            id="builtin-valid",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}, "data": "x"},
            ["data in body must be of type object"],
            id="builtin-invalid",
        ),
        pytest.param(
            {
                "apiVersion": "keda.sh/v1alpha1",
                "kind": "ScaledObject",
                "metadata": {"name": "s", "namespace": "n"},
                "spec": {"scaleTargetRef": {"name": "x"}, "triggers": [{"type": "cpu", "metadata": {}}], "bogus": 1},
            },
            ['spec.bogus: unknown field "spec.bogus"'],
            id="crd-unknown-field",
        ),
    ],
)
def test_other_kinds(manifest: dict[str, Any], want: list[str]) -> None:
    errors = xrds.validate(manifest).errors
    assert len(errors) == len(want), errors
    for fragment, error in zip(want, errors, strict=True):
        assert fragment in error


# Transition rules: a plain one runs only where there is an old value; one with optionalOldSelf
# also on create, where oldSelf is an absent optional (hasValue() false), as on Kubernetes 1.29+.
_TRANSITIONS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.size >= oldSelf.size", "message": "size cannot shrink"},
                {
                    "rule": "has(self.owner) || (oldSelf.hasValue() && !has(oldSelf.value().owner))",
                    "optionalOldSelf": True,
                    "message": "owner is required",
                },
            ],
            "properties": {"size": {"type": "integer"}, "owner": {"type": "string"}},
        }
    },
}


@pytest.mark.parametrize(
    ("spec", "old", "want"),
    [
        pytest.param({"size": 1, "owner": "a"}, None, [], id="create-with-owner"),
        pytest.param({"size": 1}, None, ["owner is required"], id="create-without-owner"),
        pytest.param({"size": 2}, {"size": 1}, [], id="update-of-an-object-that-never-had-an-owner"),
        pytest.param({"size": 2}, {"size": 1, "owner": "a"}, ["owner is required"], id="update-dropping-the-owner"),
        pytest.param(
            {"size": 1, "owner": "a"}, {"size": 2, "owner": "a"}, ["size cannot shrink"], id="plain-transition"
        ),
    ],
)
def test_transition_rules(spec: dict[str, Any], old: dict[str, Any] | None, want: list[str]) -> None:
    validator = xrds.Validator("Thing", _TRANSITIONS, namespaced=False)
    result = validator.validate(_obj(**spec), None if old is None else _obj(**old))
    assert [e.split(": ")[-1] for e in result.errors] == want, result.errors
