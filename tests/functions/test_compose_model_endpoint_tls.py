"""compose-model-endpoint with spec.tls: the upstream verified against a private CA through a BackendTLSPolicy."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import xrds
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_endpoint.fn import FunctionRunner

CA_PEM_B64 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
GATEWAY_CA = {"name": "east-gateway-ca", "namespace": "crossplane-system"}
HOST = "gateway.modelplane.ai"
ACCEPTED = {
    "status": {
        "ancestors": [
            {
                "ancestorRef": {"name": "default", "namespace": "envoy-gateway-system"},
                "controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
                "conditions": [{"type": "Accepted", "status": "True"}],
            }
        ]
    }
}
BACKEND_ACCEPTED = {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}}


def _xr(url: str = "https://203.0.113.7/", ca: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": "llm-0", "namespace": "ml"},
        "spec": {
            "url": url,
            "host": "llm-0.ml.replicas.modelplane.ai",
            "tls": {"caSecretRef": ca or GATEWAY_CA, "hostname": HOST},
        },
    }


def _secret(data: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": GATEWAY_CA,
        "data": {"ca.crt": CA_PEM_B64} if data is None else data,
    }


def _run(
    xr: dict[str, Any],
    *,
    secrets: list[dict[str, Any]] | None = None,
    observed: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    req = fnv1.RunFunctionRequest(observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))))
    for key, body in (observed or {}).items():
        req.observed.resources[key].resource.update(body)
    if secrets is not None:
        req.required_resources["upstream-ca"].SetInParent()
        for item in secrets:
            req.required_resources["upstream-ca"].items.add().resource.update(item)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    return got


def _composed(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}


def _valid(got: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == "Valid")


def test_a_gateway_endpoint_is_verified_against_its_cluster_ca() -> None:
    got = _run(_xr(), secrets=[_secret()])
    composed = _composed(got)
    assert sorted(composed) == ["backend", "backend-tls", "upstream-ca"]
    # The Backend leaves TLS to the policy: the well-known CAs would contradict the cluster's CA.
    assert composed["backend"]["spec"] == {"endpoints": [{"ip": {"address": "203.0.113.7", "port": 443}}]}
    assert composed["upstream-ca"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "llm-0-upstream-ca", "namespace": "ml"},
        "type": "Opaque",
        "data": {"ca.crt": CA_PEM_B64},
    }
    assert composed["backend-tls"]["spec"] == {
        "targetRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "llm-0"}],
        "validation": {
            "caCertificateRefs": [{"group": "", "kind": "Secret", "name": "llm-0-upstream-ca"}],
            "hostname": HOST,
        },
    }
    assert "verified as gateway.modelplane.ai" in _valid(got)["message"]
    assert got["requirements"]["resources"]["upstream-ca"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "matchName": "east-gateway-ca",
        "namespace": "crossplane-system",
    }
    for key, obj in composed.items():
        result = xrds.validate(obj)
        assert result.ok, f"{key}: {result.errors}"


def test_a_ca_beside_the_endpoint_is_used_in_place() -> None:
    got = _run(_xr(ca={"name": "my-ca", "namespace": "ml"}))
    composed = _composed(got)
    assert sorted(composed) == ["backend", "backend-tls"]
    assert composed["backend-tls"]["spec"]["validation"]["caCertificateRefs"][0]["name"] == "my-ca"
    assert "requirements" not in got or "upstream-ca" not in got["requirements"].get("resources", {})


@pytest.mark.parametrize(
    ("observed_ready", "want"),
    [
        pytest.param({"backend": BACKEND_ACCEPTED, "backend-tls": ACCEPTED}, "READY_TRUE", id="both-accepted"),
        pytest.param({"backend": BACKEND_ACCEPTED}, "READY_FALSE", id="policy-not-accepted-yet"),
        pytest.param({"backend-tls": ACCEPTED}, "READY_FALSE", id="backend-not-accepted-yet"),
    ],
)
def test_ready_once_the_backend_and_its_tls_policy_are_accepted(
    observed_ready: dict[str, dict[str, Any]], want: str
) -> None:
    got = _run(_xr(), secrets=[_secret()], observed=observed_ready)
    assert got["desired"]["composite"]["ready"] == want


# What was composed before spec.tls arrived: the endpoint sending over plain HTTP to the gateway.
HTTP_BACKEND = {
    "apiVersion": "gateway.envoyproxy.io/v1alpha1",
    "kind": "Backend",
    "metadata": {"name": "llm-0", "namespace": "ml"},
    "spec": {"endpoints": [{"ip": {"address": "203.0.113.7", "port": 80}}]},
}


@pytest.mark.parametrize(
    ("xr", "secrets", "reason", "message"),
    [
        pytest.param(_xr(), None, "WaitingForInputs", "spec.tls.caSecretRef: reading Secret", id="not-fetched-yet"),
        pytest.param(_xr(), [], "CANotFound", "crossplane-system/east-gateway-ca not found", id="not-published-yet"),
        pytest.param(_xr(), [_secret({"tls.crt": "eA=="})], "CANotFound", "has no ca.crt", id="no-ca-key"),
        pytest.param(
            _xr(ca={"name": "db-password", "namespace": "prod"}),
            [],
            "InvalidSpec",
            "spec.tls.caSecretRef: prod/db-password is neither",
            id="someone-else-s-secret-is-never-read",
        ),
        pytest.param(
            _xr(url="http://203.0.113.7/"), [], "InvalidSpec", "spec.tls: needs an https:// spec.url", id="http-url"
        ),
    ],
)
def test_until_the_ca_is_read_the_endpoint_keeps_what_runs(
    xr: dict[str, Any], secrets: list[dict[str, Any]] | None, reason: str, message: str
) -> None:
    got = _run(xr, secrets=secrets, observed={"backend": HTTP_BACKEND})
    # A Backend switched to https without its policy would fail every request: the HTTP one stays.
    assert _composed(got) == {"backend": HTTP_BACKEND}
    valid = _valid(got)
    assert (valid["status"], valid["reason"]) == ("STATUS_CONDITION_FALSE", reason)
    assert message in valid["message"]
    if reason == "InvalidSpec":
        assert "upstream-ca" not in got.get("requirements", {}).get("resources", {})


def test_tls_taken_out_of_the_spec_removes_the_copy_and_the_policy() -> None:
    xr = _xr()
    del xr["spec"]["tls"]
    observed: dict[str, dict[str, Any]] = {
        "backend": HTTP_BACKEND,
        "upstream-ca": {"kind": "Secret"},
        "backend-tls": {"kind": "BackendTLSPolicy"},
    }
    composed = _composed(_run(xr, observed=observed))
    assert sorted(composed) == ["backend"]
    assert composed["backend"]["spec"]["tls"] == {"wellKnownCACertificates": "System"}
