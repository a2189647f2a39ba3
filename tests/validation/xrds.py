"""The validation tests' view of admission: ``modelplane.admission`` plus the test suite's own paths.

Admission itself (XRD to CRD schema, defaults, strict unknown fields, types,
enums, required fields, CEL rules, metadata, the shared CRDs and the Kubernetes
OpenAPI document) lives in ``lib/modelplane/admission`` so that ``modelplane
preview`` admits manifests with the same code the tests hold to the API
server. This module re-exports its names and keeps what only tests need.

Set ``MODELPLANE_CRDS`` to use a CRD directory other than ``../shared/crds`` beside the repository.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from modelplane import kinds
from modelplane.admission.catalog import (
    COMPOSITION_CRD,
    CRDS_DIR,
    KUBERNETES_OPENAPI,
    XRD_CRD,
    BuiltinValidator,
    builtin_validator,
    crd_validator,
    crd_version_schema,
    kubernetes_openapi,
    shared_crds,
    validate,
    xr_validator,
)
from modelplane.admission.cel import (
    PORTABLE_CEL_FUNCTIONS,
    Evaluation,
    Rule,
    compile_rule,
    iter_rules,
    rule_function_names,
)
from modelplane.admission.checks import (
    default_errors,
    iter_nodes,
    missing_descriptions,
    printer_column_errors,
    rules,
    structural_errors,
    unbounded_collections,
)
from modelplane.admission.documents import JSON, Schema
from modelplane.admission.objects import apply_defaults, metadata_errors
from modelplane.admission.openapi import RULES_NOT_CHECKED, to_json_schema
from modelplane.admission.validator import Result, Validator
from modelplane.admission.xrd import Definition, definition_paths, definitions, xr_crd_schema
from modelplane.documents import read_all as load_documents
from modelplane.documents import read_one as load_document
from modelplane.repo import APIS as APIS_DIR
from modelplane.repo import ROOT as REPO

EXAMPLES_DIR = REPO / "examples"
CEL_CASES_DIR = Path(__file__).resolve().parent / "cel_cases"

__all__ = [
    "APIS_DIR",
    "CEL_CASES_DIR",
    "COMPOSITION_CRD",
    "CRDS_DIR",
    "EXAMPLES_DIR",
    "JSON",
    "KUBERNETES_OPENAPI",
    "PORTABLE_CEL_FUNCTIONS",
    "REPO",
    "RULES_NOT_CHECKED",
    "XRD_CRD",
    "BuiltinValidator",
    "Definition",
    "Evaluation",
    "Result",
    "Rule",
    "Schema",
    "Validator",
    "apply_defaults",
    "builtin_validator",
    "compile_rule",
    "crd_validator",
    "crd_version_schema",
    "default_errors",
    "definition_paths",
    "definitions",
    "iter_example_documents",
    "iter_nodes",
    "iter_rules",
    "kind_for_plural",
    "kubernetes_openapi",
    "load_document",
    "load_documents",
    "metadata_errors",
    "missing_descriptions",
    "printer_column_errors",
    "rule_function_names",
    "rules",
    "shared_crds",
    "structural_errors",
    "to_json_schema",
    "unbounded_collections",
    "validate",
    "xr_crd_schema",
    "xr_validator",
]


def iter_example_documents() -> Iterator[tuple[Path, int, JSON]]:
    """Every YAML document under ``examples/`` with its file and index."""
    for path in sorted(EXAMPLES_DIR.rglob("*")):
        if path.suffix in (".yaml", ".yml") and path.is_file():
            for i, doc in enumerate(load_documents(path)):
                yield path, i, doc


def kind_for_plural(plural: str) -> kinds.Kind:
    """The kinds.py row of a plural."""
    (k,) = [k for k in kinds.KINDS if k.plural == plural]
    return k
