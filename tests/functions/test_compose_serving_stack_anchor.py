"""compose-serving-stack's anchor: a ConfigMap that co-owns everything the stack composes, whatever path a call takes.

The ModelReplicas on the stack's cluster keep the anchor with Usages (the cluster republishes
``status.anchorRef``); with the ServingStack deleted with its cluster, what it composed stays as long as
the anchor has a Usage, because Kubernetes garbage-collects an object only once all its owners are gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from tests.functions.test_compose_serving_stack import READY, _all_ready, _desired, _req, _run, _stack

ANCHOR = "c-stack-anchor"
UID = "6b0d2c3e-0000-4000-8000-00000000a11c"
OWNER = {"apiVersion": "v1", "kind": "ConfigMap", "name": ANCHOR, "uid": UID}
REF = {"apiVersion": "v1", "kind": "ConfigMap", "name": ANCHOR, "namespace": "crossplane-system"}


def _anchor(*, uid: str = UID) -> dict[str, Any]:
    """The anchor as observed: what the stack composed, with the metadata the API server gives it."""
    metadata: dict[str, Any] = {"name": ANCHOR, "namespace": "crossplane-system"}
    if uid:
        metadata |= {"uid": uid, "resourceVersion": "7"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"servingStack": "c"}}


def _invalid() -> dict[str, Any]:
    xr = _stack()
    xr["spec"]["components"] = {"kserve": {"mode": "Sometimes"}}
    return xr


def _with_owner(observed: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``observed`` as the API server stores it once a call has co-owned it: the anchor already an owner."""
    out = {}
    for key, body in observed.items():
        metadata = {"namespace": "crossplane-system", "ownerReferences": [OWNER]} if key != "stack-anchor" else {}
        out[key] = {**body, "metadata": {**body.get("metadata", {}), **metadata}}
    return out


@dataclass(frozen=True)
class Case:
    id: str
    xr: dict[str, Any] = field(default_factory=_stack)
    observed: dict[str, dict[str, Any]] = field(default_factory=dict)
    anchored: bool = True  # whether the anchor is desired
    ref: bool = False  # whether status.anchorRef is published
    owned: bool = False  # whether every other object desired in crossplane-system is co-owned by the anchor


CASES = [
    Case("first-pass-composes-it"),
    Case(
        "observed-without-a-uid-published-not-owning",
        observed={**_all_ready("KServe", "None"), "stack-anchor": _anchor(uid="")},
        ref=True,
    ),
    Case(
        "observed-co-owns-everything",
        observed={**_all_ready("KServe", "None"), "stack-anchor": _anchor()},
        ref=True,
        owned=True,
    ),
    Case(
        "co-owned-before-owned-once",
        observed=_with_owner({**_all_ready("KServe", "None"), "stack-anchor": _anchor()}),
        ref=True,
        owned=True,
    ),
    Case(
        # Kept with everything else: the kept objects lose their server metadata, and get the anchor back.
        "invalid-spec-keeps-it-co-owning",
        xr=_invalid(),
        observed=_with_owner({**_all_ready("KServe", "None"), "stack-anchor": _anchor()}),
        ref=True,
        owned=True,
    ),
    Case("invalid-spec-never-anchored-stays-so", xr=_invalid(), observed=_all_ready("KServe", "None"), anchored=False),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_the_anchor_co_owns_what_the_stack_composes(case: Case) -> None:
    rsp = _run(_req(case.xr, case.observed))
    desired = _desired(rsp)
    assert ("stack-anchor" in desired) == case.anchored
    if case.anchored:
        anchor = desired["stack-anchor"]
        assert (anchor["apiVersion"], anchor["kind"], anchor["metadata"]) == (
            "v1",
            "ConfigMap",
            {"name": ANCHOR, "namespace": "crossplane-system"},
        )
        assert anchor["data"]["servingStack"] == "c"
        assert rsp.desired.resources["stack-anchor"].ready == fnv1.READY_TRUE
        assert "ownerReferences" not in anchor["metadata"]
    status = resource.struct_to_dict(rsp.desired.composite.resource).get("status", {})
    assert status.get("anchorRef") == (REF if case.ref else None)
    others = {k: v for k, v in desired.items() if k != "stack-anchor"}
    assert others
    for key, body in others.items():
        metadata = body.get("metadata", {})
        refs = metadata.get("ownerReferences", [])
        in_namespace = metadata.get("namespace") == "crossplane-system"
        assert refs == ([OWNER] if case.owned and in_namespace else []), key


def test_a_component_disabled_is_removed_although_the_anchor_co_owns_it() -> None:
    # Crossplane deletes what a stack no longer composes explicitly: a second owner holds back only the
    # garbage collector. cert-manager Disabled (with TLS off) leaves its release and the TLS chain out.
    observed = {**_all_ready("KServe", "None", tls=True), "stack-anchor": _anchor()}
    observed["release-cert-manager"] = {**READY, "spec": {"managementPolicies": ["Observe"]}}
    xr = _stack()
    xr["spec"]["components"] = {"certManager": {"mode": "Disabled"}}
    xr["spec"]["gateway"]["insecure"] = True
    desired = _desired(_run(_req(xr, observed)))
    assert "release-cert-manager" not in desired
    assert not {"gateway-issuer", "gateway-ca", "gateway-ca-issuer", "gateway-certificate"} & set(desired)
    assert desired["release-lws"]["metadata"]["ownerReferences"] == [OWNER]
