"""Caller auth: InferenceGateway spec.auth and ModelService spec.access.clients, run in-process.

What a platform team checks: a gateway with API keys or JWTs gets a SecurityPolicy on its
Gateway that authenticates every request and forwards the client id; the key Secrets are
found (or the field naming a missing one is reported, with everything still composed);
mode None composes no policy; and a service listing clients allows only those. Every
composed object validates against the Envoy Gateway v1.9.0 and Gateway API CRDs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
import xrds
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_inference_gateway.fn import FunctionRunner as GatewayRunner
from compose_model_service.fn import FunctionRunner as ServiceRunner

API = "modelplane.ai/v1alpha1"
READY = [{"type": "Ready", "status": "True"}]
CLIENT_ID = "x-modelplane-client-id"
# A gateway whose Release, class and Gateway are in place: what it composes next is decided by spec.auth.
INSTALLED: dict[str, dict[str, Any]] = {
    "envoy-gateway": {"status": {"conditions": READY}},
    "gateway-class": {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}},
    "gateway": {
        "status": {
            "addresses": [{"type": "IPAddress", "value": "203.0.113.10"}],
            "conditions": [{"type": "Programmed", "status": "True"}],
        }
    },
    "client-id": {},
    "auth": {},
    "auth-keys-grant": {},
}
KEYS = {"apiKeys": {"secretRefs": [{"name": "team-a"}, {"name": "team-b"}]}}
JWT = {
    "jwt": {
        "issuer": "https://auth.example.com",
        "audiences": ["inference"],
        "jwksURI": "https://auth.example.com/jwks",
    }
}


def _secret(name: str) -> dict[str, Any]:
    # A placeholder value: the function never reads it.
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "crossplane-system"},
        "type": "Opaque",
        "data": {"client": "cGxhY2Vob2xkZXI="},
    }


def _run(
    runner: Any,
    xr: dict[str, Any],
    *,
    observed: dict[str, dict[str, Any]] | None = None,
    required: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    req = fnv1.RunFunctionRequest(observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))))
    for key, body in (observed or {}).items():
        req.observed.resources[key].resource.update(body)
    for name, items in (required or {}).items():
        req.required_resources[name].SetInParent()
        for item in items:
            req.required_resources[name].items.add().resource.update(item)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(runner.RunFunction(req, None)))
    return got


def _composed(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}


def _condition(got: dict[str, Any], typ: str) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == typ)


def _assert_valid(got: dict[str, Any]) -> None:
    for key, obj in _composed(got).items():
        result = xrds.validate(obj)
        assert result.ok, f"{key}: {result.errors}"


def _gateway(auth: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"http": {"port": 80}}
    if auth is not None:
        spec["auth"] = auth
    return {"apiVersion": API, "kind": "InferenceGateway", "metadata": {"name": "default"}, "spec": spec}


# --- InferenceGateway spec.auth ---


@dataclass(frozen=True)
class GatewayCase:
    """One spec.auth, the Secrets that exist, and what the gateway composes and says."""

    auth: dict[str, Any] | None
    secrets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    policy: dict[str, Any] | None = None  # the SecurityPolicy's spec; None: no policy composed
    grant_to: list[str] = field(default_factory=list)  # Secrets the ReferenceGrant names
    reason: str = "AuthRequired"
    status: str = "True"
    message: str = ""
    ready: bool = True


_ALL_SECRETS = {"api-keys-0": [_secret("team-a")], "api-keys-1": [_secret("team-b")]}
_TARGET = [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "default"}]
_CREDENTIALS = [
    {"group": "", "kind": "Secret", "name": "team-a", "namespace": "crossplane-system"},
    {"group": "", "kind": "Secret", "name": "team-b", "namespace": "crossplane-system"},
]
_API_KEY_AUTH = {
    "credentialRefs": _CREDENTIALS,
    "extractFrom": [{"headers": ["Authorization"]}],
    "forwardClientIDHeader": CLIENT_ID,
    "sanitize": True,
}
_PROVIDER = {
    "name": "default",
    "issuer": "https://auth.example.com",
    "audiences": ["inference"],
    "remoteJWKS": {"uri": "https://auth.example.com/jwks"},
}

GATEWAY_CASES = [
    pytest.param(
        GatewayCase(
            KEYS,
            _ALL_SECRETS,
            {"targetRefs": _TARGET, "apiKeyAuth": _API_KEY_AUTH},
            ["team-a", "team-b"],
            message="callers need an API key in header Authorization",
        ),
        id="api-keys",
    ),
    pytest.param(
        GatewayCase(
            {"apiKeys": {"secretRefs": [{"name": "team-a"}], "header": "x-api-key"}},
            {"api-keys-0": [_secret("team-a")]},
            {
                "targetRefs": _TARGET,
                "apiKeyAuth": {
                    **_API_KEY_AUTH,
                    "credentialRefs": _CREDENTIALS[:1],
                    "extractFrom": [{"headers": ["x-api-key"]}],
                },
            },
            ["team-a"],
            message="callers need an API key in header x-api-key",
        ),
        id="api-keys-custom-header",
    ),
    pytest.param(
        GatewayCase(
            JWT,
            policy={
                "targetRefs": _TARGET,
                "jwt": {"providers": [{**_PROVIDER, "claimToHeaders": [{"claim": "sub", "header": CLIENT_ID}]}]},
            },
            message="callers need a JWT from https://auth.example.com",
        ),
        id="jwt-sub-is-the-client-id",
    ),
    pytest.param(
        GatewayCase(
            {"apiKeys": {**KEYS["apiKeys"], "header": "x-api-key"}, **JWT},
            _ALL_SECRETS,
            {
                "targetRefs": _TARGET,
                "apiKeyAuth": {**_API_KEY_AUTH, "extractFrom": [{"headers": ["x-api-key"]}]},
                "jwt": {"providers": [_PROVIDER]},
            },
            ["team-a", "team-b"],
            message="callers need an API key in header x-api-key and a JWT",
        ),
        id="api-keys-and-jwt-key-names-the-client",
    ),
    pytest.param(
        GatewayCase(
            KEYS,
            {"api-keys-0": [_secret("team-a")], "api-keys-1": []},
            {"targetRefs": _TARGET, "apiKeyAuth": _API_KEY_AUTH},
            ["team-a", "team-b"],
            reason="SecretNotFound",
            status="False",
            message="spec.auth.apiKeys.secretRefs[1].name: Secret crossplane-system/team-b not found",
            ready=False,
        ),
        id="unknown-secret-composes-everything-and-is-not-ready",
    ),
    pytest.param(
        GatewayCase(
            KEYS,
            {},
            {"targetRefs": _TARGET, "apiKeyAuth": _API_KEY_AUTH},
            ["team-a", "team-b"],
            reason="WaitingForInputs",
            status="Unknown",
            message="reading the API key Secrets",
        ),
        id="secrets-not-fetched-yet",
    ),
    pytest.param(
        GatewayCase(
            {"mode": "None"},
            reason="AuthDisabled",
            status="False",
            message="every caller is accepted, with no client id (for development only)",
        ),
        id="mode-none-composes-no-policy",
    ),
    pytest.param(
        GatewayCase(
            None,
            reason="AuthNotConfigured",
            status="False",
            message="spec.auth is not set (the gateway was created before it existed)",
        ),
        id="created-before-auth-keeps-serving",
    ),
]


@pytest.mark.parametrize("case", GATEWAY_CASES)
def test_gateway_auth(case: GatewayCase) -> None:
    got = _run(GatewayRunner(), _gateway(case.auth), observed=INSTALLED, required=case.secrets)
    composed = _composed(got)
    # Callers can never set the client id themselves: the gateway clears it on every request.
    assert composed["client-id"]["spec"] == {
        "targetRefs": _TARGET,
        "headers": {"earlyRequestHeaders": {"remove": [CLIENT_ID]}},
    }
    assert composed["client-id"]["metadata"] == {"name": "default-client-id", "namespace": "envoy-gateway-system"}
    if case.policy is None:
        assert "auth" not in composed
        assert "auth-keys-grant" not in composed
    else:
        assert composed["auth"]["kind"] == "SecurityPolicy"
        assert composed["auth"]["metadata"] == {"name": "default-auth", "namespace": "envoy-gateway-system"}
        assert composed["auth"]["spec"] == case.policy
    if case.grant_to:
        grant = composed["auth-keys-grant"]
        assert grant["metadata"] == {"name": "default-api-keys", "namespace": "crossplane-system"}
        assert grant["spec"]["from"] == [
            {"group": "gateway.envoyproxy.io", "kind": "SecurityPolicy", "namespace": "envoy-gateway-system"}
        ]
        assert [t["name"] for t in grant["spec"]["to"]] == case.grant_to
    elif case.policy is not None:
        assert "auth-keys-grant" not in composed
    # Nothing else the gateway composes is dropped for auth.
    assert {"envoy-gateway", "gateway-class", "gateway"} <= set(composed)
    condition = _condition(got, "AuthReady")
    assert (condition["status"], condition["reason"]) == (f"STATUS_CONDITION_{case.status.upper()}", case.reason)
    assert case.message in condition["message"]
    assert got["desired"]["composite"]["ready"] == ("READY_TRUE" if case.ready else "READY_FALSE")
    if case.reason == "SecretNotFound":
        assert any(case.message in r["message"] for r in got.get("results", [])), got.get("results")
    _assert_valid(got)


def test_gateway_asks_for_each_key_secret_by_name() -> None:
    got = _run(GatewayRunner(), _gateway(KEYS), observed=INSTALLED)
    wanted = got["requirements"]["resources"]
    assert wanted["api-keys-0"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "matchName": "team-a",
        "namespace": "crossplane-system",
    }
    assert wanted["api-keys-1"]["matchName"] == "team-b"


def test_gateway_mode_none_removes_the_policy_it_composed_before() -> None:
    got = _run(GatewayRunner(), _gateway({"mode": "None"}), observed=INSTALLED)
    composed = _composed(got)
    assert "auth" not in composed
    assert "auth-keys-grant" not in composed
    assert not any("kept" in r["message"] for r in got.get("results", [])), got.get("results")


def test_gateway_auth_waits_for_the_release_like_the_gateway() -> None:
    # The policies' CRDs come with Envoy Gateway's chart: nothing but the Release before it is Ready.
    got = _run(GatewayRunner(), _gateway(KEYS), required=_ALL_SECRETS)
    assert sorted(_composed(got)) == ["envoy-gateway"]


# --- ModelService spec.access.clients ---


def _service(access: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"endpoints": [{"selector": {"matchLabels": {"app": "llama"}}, "weight": 1}]}
    if access is not None:
        spec["access"] = access
    return {"apiVersion": API, "kind": "ModelService", "metadata": {"name": "llama", "namespace": "ml"}, "spec": spec}


_GATEWAY_XR = {
    "apiVersion": API,
    "kind": "InferenceGateway",
    "metadata": {"name": "default"},
    "status": {"address": "http://203.0.113.10"},
}
_ENDPOINT = {
    "apiVersion": API,
    "kind": "ModelEndpoint",
    "metadata": {"name": "llama-a", "namespace": "ml", "labels": {"app": "llama"}},
    "spec": {"url": "http://10.0.0.7:8000"},
    "status": {"backendName": "llama-a", "conditions": READY},
}
_SERVICE_INPUTS = {"gateway": [_GATEWAY_XR], "endpoints-0": [_ENDPOINT]}


@pytest.mark.parametrize(
    ("access", "clients"),
    [
        pytest.param({"clients": ["team-b", "team-a"]}, ["team-a", "team-b"], id="clients-allowed-sorted"),
        pytest.param({"clients": ["team-a"]}, ["team-a"], id="one-client"),
        pytest.param({}, None, id="access-without-clients-is-open"),
        pytest.param(None, None, id="no-access-is-open"),
    ],
)
def test_service_access_clients(access: dict[str, Any] | None, clients: list[str] | None) -> None:
    got = _run(ServiceRunner(), _service(access), required=_SERVICE_INPUTS, observed={"access": {}})
    composed = _composed(got)
    assert "route" in composed
    if clients is None:
        assert "access" not in composed
        assert not any("kept" in r["message"] for r in got.get("results", [])), got.get("results")
        return
    policy = composed["access"]
    assert policy["kind"] == "SecurityPolicy"
    assert policy["metadata"] == {"name": "llama-access", "namespace": "ml"}
    assert policy["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "llama"}],
        # Merged into the gateway's policy: the route keeps its authentication and adds this.
        "mergeType": "StrategicMerge",
        "authorization": {
            "defaultAction": "Deny",
            "rules": [
                {
                    "name": "clients",
                    "action": "Allow",
                    "principal": {"headers": [{"name": CLIENT_ID, "values": clients}]},
                }
            ],
        },
    }
    _assert_valid(got)


def test_service_keeps_its_access_policy_while_the_gateway_is_missing() -> None:
    observed = {"access": {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "SecurityPolicy"}}
    got = _run(
        ServiceRunner(),
        _service({"clients": ["team-a"]}),
        required={"gateway": [], "endpoints-0": [_ENDPOINT]},
        observed=observed,
    )
    assert "access" in _composed(got)
    assert _condition(got, "Routed")["reason"] == "GatewayNotFound"
