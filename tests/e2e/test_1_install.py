"""Scenario 1: the Configuration installs; every XRD is Established, every Composition accepted;
every admission case of ``tests/validation/cel_cases`` meets the real API server as the case says.

The cases are sent as a server-side dry run (``POST ...?dryRun=All``), so the
real schema, defaults and CEL rules of the CRDs Crossplane generated from our
XRDs decide, with their real messages. A case with an ``old`` object is an
update: the old one is created (paused) and the case sent as a dry-run patch.
An InferenceGateway created before ``spec.auth`` existed cannot be created
under today's CRD, so a scratch CRD plays its history: the object is created
under the schema without the rule, then the schema gains it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.admission.catalog import validate
from tests.e2e.kube import ApiError, Kube, is_true
from tests.e2e.plane import Plane, ensure_namespace, wait_established
from tests.e2e.tools import REPO
from tests.e2e.world import eventually

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
    if "old" in case and not validate(case["old"]).ok:
        pytest.skip("the old object cannot be created under today's CRD: test_gateway_created_before_auth covers it")
    try:
        if "old" in case:
            _admit_update(plane, case["old"], manifest)
        elif "status" in manifest:
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


def _merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch turning ``old`` into ``new`` (a removed field becomes null)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch = {k: _merge_patch(old.get(k), v) for k, v in new.items() if old.get(k) != v}
    patch.update({k: None for k in old if k not in new})
    return patch


def _admit_update(plane: Plane, old: dict[str, Any], manifest: dict[str, Any]) -> None:
    """Admit ``manifest`` as an update of ``old``: create ``old`` (paused), dry-run the patch, delete it."""
    meta = dict(old["metadata"])
    meta["annotations"] = {**meta.get("annotations", {}), "crossplane.io/paused": "true"}
    created = plane.kube.create({**old, "metadata": meta})
    api_version, kind, name = str(old["apiVersion"]), str(old["kind"]), str(meta["name"])
    namespace = created["metadata"].get("namespace")
    try:
        patch = {"spec": _merge_patch(old.get("spec", {}), manifest.get("spec", {}))}
        plane.kube.patch(api_version, kind, name, patch, namespace=namespace, dry_run=True)
    finally:
        plane.kube.delete(api_version, kind, name, namespace)


_CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
_SCRATCH_GROUP = "scratch.e2e.modelplane.ai"
_AUTH_RULE = "has(self.auth) || (oldSelf.hasValue() && !has(oldSelf.value().auth))"


def _scratch_crd(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": _CRD[0],
        "kind": _CRD[1],
        "metadata": {"name": f"inferencegateways.{_SCRATCH_GROUP}"},
        "spec": {
            "group": _SCRATCH_GROUP,
            "names": {"kind": "InferenceGateway", "plural": "inferencegateways", "singular": "inferencegateway"},
            "scope": "Cluster",
            "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def _refused(kube: Kube, obj: dict[str, Any]) -> str | None:
    """The API server's message refusing ``obj`` as a new object (a dry run); None while it accepts it."""
    try:
        kube.create(obj, dry_run=True)
    except ApiError as err:
        return err.message
    return None


def test_gateway_created_before_auth(plane: Plane) -> None:
    """A new gateway without spec.auth is refused; one created before the rule existed stays updatable."""
    crd = plane.kube.get(*_CRD, f"inferencegateways.{kinds.GROUP}")
    assert crd is not None
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = version["schema"]["openAPIV3Schema"]
    # Crossplane's generated CRD keeps the rule's optionalOldSelf (else it never runs on create).
    rules = schema["properties"]["spec"].get("x-kubernetes-validations", [])
    (auth_rule,) = [r for r in rules if r["rule"] == _AUTH_RULE]
    assert auth_rule.get("optionalOldSelf") is True, auth_rule
    # The real API server: a new gateway without spec.auth is refused.
    bare = {"apiVersion": f"{kinds.GROUP}/v1alpha1", "kind": "InferenceGateway", "metadata": {"name": "bare"}}
    message = _refused(plane.kube, {**bare, "spec": {"http": {"port": 80}}})
    assert message is not None and "spec.auth is required" in message, message

    # Its history on a scratch CRD: the same schema, first without the rule, then with it.
    before = copy.deepcopy(schema)
    spec = before["properties"]["spec"]
    spec["x-kubernetes-validations"] = [r for r in rules if r["rule"] != _AUTH_RULE]
    name = f"inferencegateways.{_SCRATCH_GROUP}"
    api_version = f"{_SCRATCH_GROUP}/v1alpha1"
    plane.kube.create(_scratch_crd(before))
    try:
        wait_established(plane.kube, [name])
        legacy = {"apiVersion": api_version, "kind": "InferenceGateway", "metadata": {"name": "legacy"}}
        plane.kube.create({**legacy, "spec": {"http": {"port": 80}}})
        secured = {**legacy, "metadata": {"name": "secured"}}
        plane.kube.create({**secured, "spec": {"auth": {"apiKeys": {"secretRefs": [{"name": "keys"}]}}}})
        current = plane.kube.get(*_CRD, name)
        assert current is not None
        current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema
        plane.kube.request("PUT", plane.kube.path(*_CRD, name), current)
        message = eventually(
            "the scratch CRD to refuse a new gateway without spec.auth",
            lambda: _refused(plane.kube, {**legacy, "metadata": {"name": "new"}, "spec": {}}),
        )
        assert "spec.auth is required" in message, message
        # The old gateway, still without spec.auth, takes an update.
        plane.kube.patch(api_version, "InferenceGateway", "legacy", {"spec": {"http": {"port": 8080}}})
        # One that had spec.auth cannot lose it.
        with pytest.raises(ApiError, match=r"spec\.auth is required"):
            plane.kube.patch(api_version, "InferenceGateway", "secured", {"spec": {"auth": None}}, dry_run=True)
    finally:
        for obj in ("legacy", "secured"):
            plane.kube.delete(api_version, "InferenceGateway", obj)
        plane.kube.delete(*_CRD, name)
