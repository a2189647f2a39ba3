"""No hijack (issue 26): a ``modelplane.ai/`` label routes only what modelplane composed.

A ModelService selecting ``modelplane.ai/deployment=X`` sends traffic only to the ModelEndpoints
ModelDeployment X composed (their controller reference names it). A hand-made ModelEndpoint
carrying that label, or any ``modelplane.ai/`` label, gets no traffic and a warning names it;
hand-made endpoints selected by the user's own labels are routed as before.
"""

from __future__ import annotations

from typing import Any

import pytest

from compose_model_service.fn import FunctionRunner as ServiceRunner
from tests.functions.test_compose_routing import API, GATEWAY, READY, _assert_valid, _composed, _condition, _serve


def _owner(kind: str, name: str, *, api_version: str = API, controller: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def _endpoint(name: str, labels: dict[str, str], owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "labels": labels}
    if owners is not None:
        meta["ownerReferences"] = owners
    return {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": meta,
        "spec": {"url": "http://10.0.0.1"},
        "status": {"backendName": name, "conditions": READY},
    }


def _service(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ModelService",
        "metadata": {"name": "llm", "namespace": "ml"},
        "spec": {"endpoints": [{"selector": {"matchLabels": labels}, "weight": 1}]},
    }


DEPLOYMENT = {"modelplane.ai/deployment": "llama"}
COMPOSED = _endpoint("llama-0", DEPLOYMENT, [_owner("ModelDeployment", "llama")])


def _refs(got: dict[str, Any]) -> dict[str, int]:
    rule = _composed(got)["route"]["spec"]["rules"][0]
    return {r["name"]: r["weight"] for r in rule.get("backendRefs", [])}


def _warnings(got: dict[str, Any]) -> list[str]:
    return [r["message"] for r in got.get("results", []) if r.get("severity") == "SEVERITY_WARNING"]


@pytest.mark.parametrize(
    "evil",
    [
        pytest.param(_endpoint("evil", DEPLOYMENT), id="no-owner"),
        pytest.param(_endpoint("evil", DEPLOYMENT, [_owner("ModelDeployment", "other")]), id="another-deployment"),
        pytest.param(_endpoint("evil", DEPLOYMENT, [_owner("Deployment", "llama", api_version="apps/v1")]), id="kind"),
        pytest.param(
            _endpoint("evil", DEPLOYMENT, [_owner("ModelDeployment", "llama", api_version="evil.example/v1")]),
            id="another-group",
        ),
        pytest.param(
            _endpoint("evil", DEPLOYMENT, [_owner("ModelDeployment", "llama", controller=False)]),
            id="owner-not-controller",
        ),
    ],
)
def test_a_hand_made_endpoint_with_a_deployment_label_gets_no_traffic(evil: dict[str, Any]) -> None:
    got = _serve(ServiceRunner(), _service(DEPLOYMENT), [GATEWAY, COMPOSED, evil])
    assert _refs(got) == {"llama-0": 1}
    status = got["desired"]["composite"]["resource"]["status"]
    assert status["endpoints"][0]["endpoints"] == ["llama-0"]
    assert status["matchedEndpoints"] == 1
    routed = _condition(got, "Routed")
    assert routed["reason"] == "Routed"
    assert "evil" not in routed["message"].split(" routes to ")[-1].split(";")[0]
    named = [w for w in _warnings(got) if "ModelEndpoint ml/evil" in w]
    assert named, _warnings(got)
    assert "modelplane.ai/deployment=llama" in named[0]
    assert "not composed by ModelDeployment llama" in named[0]
    assert "evil" in routed["message"]
    _assert_valid(got)


@pytest.mark.parametrize(
    ("labels", "selector"),
    [
        # The user's own labels, no modelplane.ai/ label: routed as before, whatever controls it.
        pytest.param({"team": "ml"}, {"team": "ml"}, id="users-own-labels"),
        # A modelplane.ai/ label other than deployment, on a hand-made endpoint: never routed.
        pytest.param({"team": "ml", "modelplane.ai/cluster": "gpu-1"}, {"team": "ml"}, id="other-modelplane-label"),
    ],
)
def test_hand_made_endpoints_are_matched_by_the_users_labels_only(
    labels: dict[str, str], selector: dict[str, str]
) -> None:
    external = _endpoint("saas", labels)
    got = _serve(ServiceRunner(), _service(selector), [GATEWAY, external])
    hijacks = any(k.startswith("modelplane.ai/") for k in labels)
    assert _refs(got) == ({} if hijacks else {"saas": 1})
    assert any("ModelEndpoint ml/saas" in w for w in _warnings(got)) is hijacks
    _assert_valid(got)


def test_a_composed_endpoint_with_a_user_selector_and_a_pool_endpoint_are_routed() -> None:
    # A deployment's endpoints carry modelplane.ai/ labels and its controller reference: routed,
    # whichever selector matches them (here the deployment's label and a pool label beside it).
    pool = _endpoint(
        "llama-gpu-1",
        {**DEPLOYMENT, "modelplane.ai/cluster": "gpu-1"},
        [_owner("ModelDeployment", "llama")],
    )
    got = _serve(ServiceRunner(), _service(DEPLOYMENT), [GATEWAY, COMPOSED, pool])
    assert _refs(got) == {"llama-0": 1, "llama-gpu-1": 1}
    assert not [w for w in _warnings(got) if "not composed by" in w]
