"""Scenario 1: the Configuration installs; every XRD is Established, every Composition accepted;
every admission case of ``tests/validation/cel_cases`` meets the real API server as the case says.

The cases are sent as a server-side dry run (``POST ...?dryRun=All``), so the
real schema, defaults and CEL rules of the CRDs Crossplane generated from our
XRDs decide, with their real messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from tests.e2e.kube import ApiError, is_true
from tests.e2e.plane import Plane, ensure_namespace
from tests.e2e.tools import REPO

pytestmark = pytest.mark.e2e

CEL_CASES = REPO / "tests" / "validation" / "cel_cases"
XRD = ("apiextensions.crossplane.io/v2", "CompositeResourceDefinition")
COMPOSITION = ("apiextensions.crossplane.io/v1", "Composition")


def _cases() -> list[Any]:
    out = []
    for path in sorted(CEL_CASES.glob("*.yaml")):
        for case in yaml.safe_load(Path(path).read_text()) or []:
            out.append(pytest.param(case, id=f"{path.stem}/{case['name']}"))
    return out


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.kind) for k in kinds.KINDS])
def test_xrd_established_and_composition_accepted(plane: Plane, kind: kinds.Kind) -> None:
    xrd = plane.kube.get(*XRD, f"{kind.plural}.{kinds.GROUP}")
    assert xrd is not None, f"the Configuration did not install the XRD of {kind.kind}"
    established = [c for c in xrd.get("status", {}).get("conditions", []) if c.get("type") == "Established"]
    assert is_true(xrd, "Established"), f"XRD {kind.plural} not Established: {established}"
    crd = plane.kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", f"{kind.plural}.{kinds.GROUP}")
    assert is_true(crd, "Established"), f"the CRD generated from the XRD of {kind.kind} is not Established"
    composition = plane.kube.get(*COMPOSITION, kind.composition)
    assert composition is not None, f"Composition {kind.composition} was not accepted"
    steps = composition["spec"]["pipeline"]
    assert [s["functionRef"]["name"] for s in steps] == [kind.function_ref]
    revisions = plane.kube.list(
        "apiextensions.crossplane.io/v1",
        "CompositionRevision",
        labels={"crossplane.io/composition-name": kind.composition},
    )
    assert revisions, f"Crossplane made no CompositionRevision of {kind.composition}"


def test_functions_healthy(plane: Plane) -> None:
    for kind in kinds.KINDS:
        function = plane.kube.get("pkg.crossplane.io/v1", "Function", kind.function_ref)
        assert is_true(function, "Installed"), f"{kind.function_ref}: {function and function.get('status')}"
        assert is_true(function, "Healthy"), f"{kind.function_ref}: {function and function.get('status')}"


@pytest.mark.parametrize("case", _cases())
def test_cel_case_meets_real_admission(plane: Plane, case: dict[str, Any]) -> None:
    manifest = dict(case["manifest"])
    kind = kinds.BY_KIND[manifest["kind"]]
    if kind.namespaced:
        manifest["metadata"] = {"namespace": "default", **manifest.get("metadata", {})}
        ensure_namespace(plane.kube, manifest["metadata"]["namespace"])
    try:
        if "status" in manifest:
            _admit_status(plane, manifest)
        else:
            plane.kube.create(manifest, dry_run=True)
    except ApiError as err:
        assert not case["valid"], f"refused a valid case: {err.message}"
        assert case["message"] in err.message, f"refused with another message: {err.message}"
    else:
        assert case["valid"], f"the API server accepted an invalid case (expected: {case['message']!r})"


def _admit_status(plane: Plane, manifest: dict[str, Any]) -> None:
    """Admit a manifest's status as its controller would write it: create the object, dry-run its status.

    The status subresource ignores ``status`` on create, so the object is
    created for real (paused, so Crossplane composes nothing and adds no
    finalizer) and its status sent as a server-side dry run; then it is deleted.
    """
    meta = dict(manifest["metadata"])
    meta["annotations"] = {**meta.get("annotations", {}), "crossplane.io/paused": "true"}
    body = {k: v for k, v in manifest.items() if k != "status"} | {"metadata": meta}
    created = plane.kube.create(body)
    try:
        plane.kube.patch(
            str(manifest["apiVersion"]),
            str(manifest["kind"]),
            str(meta["name"]),
            {"status": manifest["status"]},
            namespace=created["metadata"].get("namespace"),
            subresource="status",
            dry_run=True,
        )
    finally:
        plane.kube.delete(str(manifest["apiVersion"]), str(manifest["kind"]), str(meta["name"]), meta.get("namespace"))
