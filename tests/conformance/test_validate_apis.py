"""Our XRDs, examples and admission cases under the real ``crossplane resource validate``.

- Every example manifest validates against ``apis/`` (the CLI derives the XR
  CRDs from our XRDs itself) plus the real CRDs of the other kinds it uses.
- Every admission case of tests/validation/cel_cases is accepted, or refused
  with its expected message, by the API server's own validation (schema,
  unknown fields, CEL rules) as the CLI runs it; the few places where the CLI
  words a message differently, or does not check at all, are listed below
  (measured again with the v2.5 CLI's ``resource validate``: the same two
  ObjectMeta checks, the same float wording and unknown-field form as the
  v2.2 ``beta validate``; every other refusal carries the API server's
  message verbatim).
- The package metadata, XRDs and Compositions validate against Crossplane's
  own CRDs.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from tests.conformance.cli import Verdict, require_crds, resource_validate
from tests.conformance.schemas import APIS, REPO, extensions

EXAMPLES = REPO / "examples"
CEL_CASES = REPO / "tests" / "validation" / "cel_cases"


def _docs(paths: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    return [(p, d) for p in paths for d in yaml.safe_load_all(p.read_text()) if isinstance(d, dict)]


def _cel_cases() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{p.stem}/{c['name']}", c) for p in sorted(CEL_CASES.glob("*.yaml")) for c in yaml.safe_load(p.read_text())
    ]


# Checks the API server makes on ObjectMeta, outside the CRD schema: resource validate
# does not make them, so it accepts these manifests (asserted, so that the day it
# refuses them this table is updated).
NOT_CHECKED_BY_CLI = {
    "inferenceclusters/bad-label-value": "label values are checked by ObjectMeta validation",
    "modeldeployments/md-placement-pinned-twice": "the CLI does not check x-kubernetes-list-type: set for duplicates",
    "modelservices/access-clients-repeated": "the CLI does not check x-kubernetes-list-type: set for duplicates",
    "modelservices/limits-clients-repeated": "the CLI does not check x-kubernetes-list-type: set for duplicates",
    "inferenceclusters/storage-classes-duplicate-name": "the CLI does not check x-kubernetes-list-type: map keys",
}

# Messages the CLI words differently from the API server's admission response
# (the cel_cases messages are the latter).
CLI_MESSAGE = {
    # The schema bound is a float64 printed with Go's %v.
    "modelservices/ms-weight-too-large": "should be less than or equal to 1e+06",
}
# kubectl's strict field validation reports 'unknown field "a.b.c"'; the CLI reports pruned fields as
# 'a.b.c: Invalid value: "c": unknown field: "c"'.
_UNKNOWN_FIELD = re.compile(r'^unknown field "(?P<path>(?:[^".]*\.)*(?P<field>[^".]+))"$')


def cli_message(case_id: str, message: str) -> str:
    """The message ``crossplane resource validate`` prints for a case the API server refuses with ``message``."""
    if case_id in CLI_MESSAGE:
        return CLI_MESSAGE[case_id]
    if m := _UNKNOWN_FIELD.match(message):
        return f'{m["path"]}: Invalid value: "{m["field"]}": unknown field: "{m["field"]}"'
    return message


@pytest.mark.parametrize(
    ("case_id", "message", "want"),
    [
        pytest.param(
            "x/unknown-field",
            'unknown field "spec.devices[0].memory"',
            'spec.devices[0].memory: Invalid value: "memory": unknown field: "memory"',
            id="unknown-nested-field",
        ),
        pytest.param(
            "x/unknown-top",
            'unknown field "spec"',
            'spec: Invalid value: "spec": unknown field: "spec"',
            id="unknown-top-field",
        ),
        pytest.param(
            "modelservices/ms-weight-too-large",
            "should be less than or equal to 1000000",
            "should be less than or equal to 1e+06",
            id="listed-override",
        ),
        pytest.param("x/cel", "must be a power of two", "must be a power of two", id="cel-message-unchanged"),
    ],
)
def test_cli_message(case_id: str, message: str, want: str) -> None:
    assert cli_message(case_id, message) == want


@pytest.fixture(scope="module")
def cel_verdicts(binary: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Verdict]:
    cases = _cel_cases()
    verdicts = resource_validate(binary, [APIS], [c["manifest"] for _, c in cases], tmp_path_factory.mktemp("cel"))
    return {case_id: v for (case_id, _), v in zip(cases, verdicts, strict=True)}


def test_the_tables_name_real_cases() -> None:
    ids = {case_id for case_id, _ in _cel_cases()}
    assert set(NOT_CHECKED_BY_CLI) | set(CLI_MESSAGE) <= ids


@pytest.mark.parametrize(("case_id", "case"), [pytest.param(i, c, id=i) for i, c in _cel_cases()])
def test_admission_case(case_id: str, case: dict[str, Any], cel_verdicts: dict[str, Verdict]) -> None:
    if "old" in case:
        # Each manifest is validated as a create (its optionalOldSelf rules run with no old object).
        pytest.skip("resource validate has no old object: updates meet the real API server in tests/e2e")
    verdict = cel_verdicts[case_id]
    if case["valid"] or case_id in NOT_CHECKED_BY_CLI:
        assert verdict.ok, verdict.errors
        return
    want = cli_message(case_id, case["message"])
    assert any(want in e for e in verdict.errors), f"want an error containing {want!r}, got {list(verdict.errors)}"


def test_examples_validate(binary: Path, tmp_path: Path) -> None:
    require_crds()
    docs = _docs(sorted(EXAMPLES.rglob("*.yaml")))
    objs = [d for _, d in docs]
    verdicts = resource_validate(binary, extensions(objs, tmp_path / "schemas"), objs, tmp_path / "run")
    bad = [
        f"{p.relative_to(REPO)}: {v.gvk} {v.name}: {list(v.errors)}"
        for (p, _), v in zip(docs, verdicts, strict=True)
        if not v.ok
    ]
    assert bad == []
    assert Counter(v.gvk for v in verdicts)["modelplane.ai/v1alpha1, Kind=ModelDeployment"] > 0


def test_packages_xrds_and_compositions_validate_against_crossplane_crds(binary: Path, tmp_path: Path) -> None:
    require_crds()
    paths = [
        REPO / "crossplane.yaml",
        *sorted(REPO.glob("functions/*/package/crossplane.yaml")),
        *sorted(APIS.glob("*/definition.yaml")),
        *sorted(APIS.glob("*/composition.yaml")),
    ]
    docs = _docs(paths)
    objs = [d for _, d in docs]
    verdicts = resource_validate(binary, extensions(objs, tmp_path / "schemas"), objs, tmp_path / "run")
    bad = [f"{p.relative_to(REPO)}: {list(v.errors)}" for (p, _), v in zip(docs, verdicts, strict=True) if not v.ok]
    assert bad == []
    assert Counter(d["kind"] for d in objs) == {
        "Configuration": 1,
        "Function": len(kinds.KINDS),
        "CompositeResourceDefinition": len(kinds.KINDS),
        "Composition": len(kinds.KINDS),
    }
