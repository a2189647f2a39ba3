"""A composed resource's metadata and name, as Crossplane derives them from the XR."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.render import RenderError
from modelplane.render.composed import child_name, generate_name, render_metadata, validate_name

XR: dict[str, Any] = {
    "apiVersion": "example.org/v1",
    "kind": "XThing",
    "metadata": {"name": "thing", "namespace": "team-a", "uid": "u-1", "labels": {"crossplane.io/composite": "pre"}},
}
OWNER = {
    "apiVersion": "example.org/v1",
    "kind": "XThing",
    "name": "thing",
    "uid": "u-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


@pytest.mark.parametrize(
    ("parent", "uid", "child", "want"),
    [
        # What Crossplane core v2.4's render engine named these (tests/render/test_conformance_toy.py cases).
        pytest.param("thing-", "1f0a367a-a3b9-5c8d-956c-43970bcdebcc", "bucket", "thing-9d196ee8b741", id="bucket"),
        pytest.param("thing-", "1f0a367a-a3b9-5c8d-956c-43970bcdebcc", "10-later", "thing-9339e151364d", id="10-later"),
        pytest.param("prefix", "1f0a367a-a3b9-5c8d-956c-43970bcdebcc", "bucket", "prefix-9d196ee8b741", id="no-dash"),
        pytest.param("a" * 60, "u", "x", "a" * 50 + "-" + child_name("", "u", "x"), id="truncated-with-a-dash"),
        pytest.param("a" * 50 + "-" + "b" * 9, "u", "x", "a" * 50 + "-" + child_name("", "u", "x"), id="cut-at-a-dash"),
    ],
)
def test_child_name(parent: str, uid: str, child: str, want: str) -> None:
    assert child_name(parent, uid, child) == want
    assert len(want) <= 63


def _cd(meta: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


@pytest.mark.parametrize(
    ("meta", "want"),
    [
        pytest.param(
            {},
            {
                "generateName": "pre-",
                "namespace": "team-a",
                "annotations": {"crossplane.io/composition-resource-name": "r"},
                "labels": {"crossplane.io/composite": "pre"},
                "ownerReferences": [OWNER],
            },
            id="fresh",
        ),
        pytest.param(
            {
                "name": "fixed",
                "namespace": "elsewhere",
                "labels": {"app": "x"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "u-2", "extra": 1}],
            },
            {
                "name": "fixed",
                "namespace": "team-a",
                "annotations": {"crossplane.io/composition-resource-name": "r"},
                "labels": {"app": "x", "crossplane.io/composite": "pre"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "u-2"}, OWNER],
            },
            id="named-moved-other-owner-kept",
        ),
        pytest.param(
            {"generateName": "mine-", "ownerReferences": [{**OWNER, "name": "old"}]},
            {
                "generateName": "mine-",
                "namespace": "team-a",
                "annotations": {"crossplane.io/composition-resource-name": "r"},
                "labels": {"crossplane.io/composite": "pre"},
                "ownerReferences": [OWNER],
            },
            id="own-reference-replaced",
        ),
    ],
)
def test_render_metadata(meta: dict[str, Any], want: dict[str, Any]) -> None:
    cd = _cd(meta)
    render_metadata(cd, XR, "r")
    assert cd["metadata"] == want


def test_render_metadata_refuses_another_controller() -> None:
    cd = _cd({"name": "x", "ownerReferences": [{**OWNER, "kind": "Boss", "name": "b", "uid": "u-9"}]})
    with pytest.raises(RenderError, match=r"x is already controlled by Boss b \(UID u-9\)"):
        render_metadata(cd, XR, "r")


@pytest.mark.parametrize(
    ("meta", "want"),
    [
        pytest.param({"name": "kept", "generateName": "g-"}, "kept", id="named"),
        pytest.param(
            {
                "generateName": "g-",
                "annotations": {"crossplane.io/composition-resource-name": "r"},
                "ownerReferences": [OWNER],
            },
            child_name("g-", "u-1", "r"),
            id="from-the-owner-uid",
        ),
        pytest.param(
            {
                "generateName": "g-",
                "annotations": {"crossplane.io/composition-resource-name": "r"},
                "ownerReferences": [{**OWNER, "uid": ""}],
            },
            "g-slskw",
            id="no-uid-a-stable-random-looking-suffix",
        ),
    ],
)
def test_generate_name(meta: dict[str, Any], want: str) -> None:
    cd = _cd(meta)
    generate_name(cd)
    assert cd["metadata"]["name"] == want


@pytest.mark.parametrize(
    ("cd", "ok"),
    [
        pytest.param(_cd({"name": "a-b.c"}), True, id="subdomain"),
        pytest.param(_cd({"name": "A"}), False, id="upper-case"),
        pytest.param(_cd({"name": "a" * 254}), False, id="too-long"),
        pytest.param(_cd({"name": "system:x"}), False, id="colon"),
        pytest.param(
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:x"}},
            True,
            id="colon-in-rbac",
        ),
    ],
)
def test_validate_name(cd: dict[str, Any], ok: bool) -> None:
    if ok:
        validate_name(cd, "r")
        return
    with pytest.raises(RenderError, match="Must be a valid RFC 1123 subdomain name"):
        validate_name(cd, "r")
