"""Every XRD and Composition in apis/ is one Crossplane and the API server accept."""

from __future__ import annotations

import pytest
import xrds
from celpy.celparser import CELParseError

from modelplane import kinds

_DEFINITIONS = [pytest.param(d, id=d.kind) for d in xrds.definitions().values()]
_RULES = [pytest.param(r, id=f"{r.kind}:{r.path}:{i}") for i, r in enumerate(xrds.rules())]
_KINDS = [pytest.param(k, id=k.kind) for k in kinds.KINDS]


@pytest.fixture(scope="module")
def xrd_crd() -> xrds.Validator:
    schema = xrds.crd_version_schema(xrds.XRD_CRD, "v2")
    return xrds.Validator("CompositeResourceDefinition", schema, namespaced=False)


@pytest.fixture(scope="module")
def composition_crd() -> xrds.Validator:
    schema = xrds.crd_version_schema(xrds.COMPOSITION_CRD, "v1")
    return xrds.Validator("Composition", schema, namespaced=False)


@pytest.mark.parametrize("kind", _KINDS)
def test_every_kind_has_an_xrd_and_a_composition(kind: kinds.Kind) -> None:
    assert (xrds.APIS_DIR / kind.plural / "definition.yaml").is_file()
    assert (xrds.APIS_DIR / kind.plural / "composition.yaml").is_file()


def test_no_xrd_for_an_unknown_kind() -> None:
    plurals = {p.parent.name for p in xrds.definition_paths()}
    assert plurals <= {k.plural for k in kinds.KINDS}


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_xrd_is_accepted_by_crossplane(definition: xrds.Definition, xrd_crd: xrds.Validator) -> None:
    result = xrd_crd.validate(definition.xrd)
    assert result.errors == ()
    assert definition.xrd["apiVersion"] == "apiextensions.crossplane.io/v2"
    assert definition.xrd["kind"] == "CompositeResourceDefinition"


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_xrd_names_match_kinds_table(definition: xrds.Definition) -> None:
    kind = kinds.BY_KIND[definition.kind]
    spec = definition.xrd["spec"]
    assert definition.path.parent.name == kind.plural
    assert definition.xrd["metadata"]["name"] == f"{kind.plural}.{kinds.GROUP}"
    assert spec["group"] == kinds.GROUP
    assert spec["scope"] == kind.scope
    assert spec["names"]["kind"] == kind.kind
    assert spec["names"]["plural"] == kind.plural
    assert spec["names"]["singular"] == kind.kind.lower()
    assert "modelplane" in spec["names"].get("categories", [])
    assert spec["defaultCompositionRef"] == {"name": kind.composition}
    assert [v["name"] for v in spec["versions"]] == [kinds.VERSION]
    (version,) = spec["versions"]
    assert version["served"] is True
    assert version["referenceable"] is True


# Short names kubectl resolves to built-in kinds.
_CORE_SHORT_NAMES = frozenset(
    {
        "cm", "cs", "csr", "ds", "deploy", "ep", "ev", "hpa", "ing", "limits", "netpol", "no",
        "ns", "pc", "pdb", "po", "pv", "pvc", "quota", "rc", "rs", "sa", "sc", "sts", "svc",
        "crd", "crds", "cj", "ingclass", "vac",
    }
)  # fmt: skip


def test_short_names_are_unique_and_shadow_no_other_kind() -> None:
    taken = set(_CORE_SHORT_NAMES)
    for crd in xrds.shared_crds():
        taken.update(crd["spec"]["names"].get("shortNames", []))
    seen: list[str] = []
    for d in xrds.definitions().values():
        for short in d.xrd["spec"]["names"].get("shortNames", []):
            assert short not in taken, f"{d.kind} short name {short} is already another kind's"
            assert short not in seen, f"{d.kind} short name {short} is used twice"
            seen.append(short)


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_schema_declares_only_spec_and_status(definition: xrds.Definition) -> None:
    schema = definition.schema
    assert schema.get("type") == "object"
    assert set(schema.get("properties", {})) <= {"spec", "status"}
    assert "spec" in schema["properties"]
    # Crossplane keeps only spec's and status's rules; anything at the root would be dropped silently.
    assert set(schema) <= {"type", "description", "properties", "required"}
    assert "crossplane" not in schema["properties"]["spec"].get("properties", {})
    assert not set(schema["properties"].get("status", {}).get("properties", {})) & {"conditions", "crossplane"}


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_schema_is_structural(definition: xrds.Definition) -> None:
    assert xrds.structural_errors(definition.crd_schema) == []


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_defaults_pass_their_own_rules(definition: xrds.Definition) -> None:
    # The real API server refused the InferenceCluster CRD for this: a default the rules could not read.
    assert xrds.default_errors(definition.kind, definition.crd_schema) == []


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_every_property_is_described(definition: xrds.Definition) -> None:
    assert xrds.missing_descriptions(definition.schema) == []


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_collections_used_by_rules_are_bounded(definition: xrds.Definition) -> None:
    assert xrds.unbounded_collections(definition.crd_schema) == []


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_printer_columns_name_schema_fields(definition: xrds.Definition) -> None:
    columns = definition.version.get("additionalPrinterColumns", [])
    assert xrds.printer_column_errors(definition.crd_schema, columns) == []
    # Crossplane adds these itself.
    assert not {c["name"] for c in columns} & {"SYNCED", "READY", "COMPOSITION", "COMPOSITIONREVISION", "AGE"}


@pytest.mark.parametrize("rule", _RULES)
def test_rule_compiles_with_cel_python(rule: xrds.Rule) -> None:
    try:
        xrds.compile_rule(rule.rule)
    except CELParseError as e:
        pytest.fail(f"{rule.id} does not parse: {e}")


@pytest.mark.parametrize("rule", _RULES)
def test_rule_uses_only_portable_functions(rule: xrds.Rule) -> None:
    assert xrds.rule_function_names(rule.rule) <= xrds.PORTABLE_CEL_FUNCTIONS


@pytest.mark.parametrize("rule", _RULES)
def test_rule_has_a_message_and_runs_on_create(rule: xrds.Rule) -> None:
    assert rule.message
    assert not rule.message.startswith("failed rule")
    # A transition rule the API server skips on create would let a new object past it unchecked.
    assert not rule.transition or rule.optional_old_self


@pytest.mark.parametrize("kind", _KINDS)
def test_composition(kind: kinds.Kind, composition_crd: xrds.Validator) -> None:
    path = xrds.APIS_DIR / kind.plural / "composition.yaml"
    if not path.is_file():
        pytest.fail(f"{path} is missing")
    composition = xrds.load_document(path)
    assert composition_crd.validate(composition).errors == ()
    assert composition["apiVersion"] == "apiextensions.crossplane.io/v1"
    assert composition["kind"] == "Composition"
    assert composition["metadata"]["name"] == kind.composition
    spec = composition["spec"]
    assert spec["compositeTypeRef"] == {"apiVersion": kinds.API_VERSION, "kind": kind.kind}
    assert spec["mode"] == "Pipeline"
    assert spec["pipeline"] == [{"step": kind.function, "functionRef": {"name": kind.function_ref}}]
