"""compose-model-service's priority tiers and compose-model-endpoint's credentials, run in-process.

What a user checks: which backendRef gets traffic with which weight, whether Envoy fails over per
request (a fallback Backend and the route's BackendTrafficPolicy) or the control plane moves the
traffic, and what the conditions say about bad tiers and missing Secrets. Everything composed
validates against the real CRDs.
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

from compose_model_endpoint.fn import FunctionRunner as EndpointRunner
from compose_model_service.fn import FunctionRunner as ServiceRunner
from modelplane.render.store import Store

API = "modelplane.ai/v1alpha1"
READY = [{"type": "Ready", "status": "True"}]
GATEWAY = {
    "apiVersion": API,
    "kind": "InferenceGateway",
    "metadata": {"name": "default"},
    "status": {"address": "http://203.0.113.10"},
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


def _serve(
    runner: Any, xr: dict[str, Any], objects: list[dict[str, Any]], observed: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Call ``runner`` as Crossplane does: once, then again with its requirements answered from ``objects``."""
    first = _run(runner, xr, observed=observed)
    store, required = Store(objects), {}
    for name, selector in first.get("requirements", {}).get("resources", {}).items():
        found = store.fetch(json_format.ParseDict(selector, fnv1.ResourceSelector()))
        required[name] = [resource.struct_to_dict(item.resource) for item in found.items]
    return _run(runner, xr, observed=observed, required=required)


def _composed(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}


def _condition(got: dict[str, Any], typ: str) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == typ)


def _assert_valid(got: dict[str, Any]) -> None:
    for key, obj in _composed(got).items():
        result = xrds.validate(obj)
        assert result.ok, f"{key}: {result.errors}"


def _service(*entries: tuple[str, int | None], weight: int = 1) -> dict[str, Any]:
    """A ModelService whose entries select by ``app`` label, each with its tier (None: unset)."""
    out = []
    for app, tier in entries:
        entry: dict[str, Any] = {"selector": {"matchLabels": {"app": app}}, "weight": weight}
        if tier is not None:
            entry["tier"] = tier
        out.append(entry)
    return {
        "apiVersion": API,
        "kind": "ModelService",
        "metadata": {"name": "llm", "namespace": "ml"},
        "spec": {"endpoints": out},
    }


def _endpoint(
    name: str, app: str, *, url: str = "http://10.0.0.1:8000", ready: bool = True, credentials: str | None = None
) -> dict[str, Any]:
    """A hand-made ModelEndpoint (no modelplane.ai/ label, so no controller reference is needed)."""
    status: dict[str, Any] = {"backendName": name, "conditions": READY if ready else []}
    if credentials:
        status["credentialsFilterName"] = credentials
    return {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": "ml", "labels": {"app": app}},
        "spec": {"url": url},
        "status": status,
    }


def _refs(got: dict[str, Any]) -> dict[str, int]:
    rule = _composed(got)["route"]["spec"]["rules"][0]
    return {r["name"]: r["weight"] for r in rule.get("backendRefs", [])}


@dataclass(frozen=True)
class Case:
    """A tiered service, its endpoints, and what the user sees."""

    id: str
    xr: dict[str, Any]
    endpoints: list[dict[str, Any]]
    refs: dict[str, int]
    fallbacks: list[str] = field(default_factory=list)  # fallback Backends composed (their keys)
    traffic: bool = False  # a BackendTrafficPolicy with health checks and retries
    message: str = ""  # in the Routed message


CASES = [
    Case(
        "ip-endpoints-fail-over-per-request",
        _service(("primary", 0), ("backup", 1)),
        [_endpoint("p-0", "primary"), _endpoint("p-1", "primary"), _endpoint("b-0", "backup", url="http://10.0.0.9")],
        {"p-0": 1, "p-1": 1, "llm-fallback-b-0": 1},
        fallbacks=["fallback-b-0"],
        traffic=True,
        message="routes to p-0 50.0%, p-1 50.0%; falls back per request to tier 1: b-0 100.0%",
    ),
    Case(
        "hosted-fallback-with-its-host-header-fails-over-at-the-control-plane",
        _service(("primary", 0), ("hosted", 1)),
        [_endpoint("p-0", "primary"), _endpoint("openai", "hosted", url="https://api.openai.com/v1")],
        {"p-0": 1, "openai": 0},
        message=(
            "tier 1 (openai) gets the traffic once no tier-0 endpoint is Ready: the route's per-backend filters "
            "keep Envoy Gateway from failing over per request"
        ),
    ),
    Case(
        "primary-down-the-fallback-tier-serves",
        _service(("primary", 0), ("hosted", 1)),
        [_endpoint("p-0", "primary", ready=False), _endpoint("openai", "hosted", url="https://api.openai.com/v1")],
        {"p-0": 0, "openai": 1},
        message="routes to openai 100.0%; spec.endpoints[0] match(es) no Ready endpoint; tier 1 serves",
    ),
    Case(
        "primary-down-ip-fallback-uses-its-own-backend",
        _service(("primary", 0), ("backup", 1)),
        [_endpoint("p-0", "primary", ready=False), _endpoint("b-0", "backup", url="http://10.0.0.9")],
        {"p-0": 0, "b-0": 1},
        message="tier 1 serves (no tier below it has a Ready endpoint)",
    ),
    Case(
        "weights-apply-within-a-tier",
        {
            **_service(),
            "spec": {
                "endpoints": [
                    {"selector": {"matchLabels": {"app": "a"}}, "weight": 3},
                    {"selector": {"matchLabels": {"app": "b"}}, "weight": 1},
                    {"selector": {"matchLabels": {"app": "c"}}, "weight": 1, "tier": 1},
                    {"selector": {"matchLabels": {"app": "d"}}, "weight": 4, "tier": 1},
                ]
            },
        },
        [_endpoint(n, n, url=f"http://10.0.0.{i}") for i, n in enumerate("abcd", start=1)],
        {"a": 3, "b": 1, "llm-fallback-c": 1, "llm-fallback-d": 4},
        fallbacks=["fallback-c", "fallback-d"],
        traffic=True,
        message="routes to a 75.0%, b 25.0%; falls back per request to tier 1: c 20.0%, d 80.0%",
    ),
    Case(
        "an-endpoint-both-tiers-select-stays-a-primary",
        _service(("shared", 0), ("shared", 1)),
        [_endpoint("s-0", "shared")],
        {"s-0": 1},
        message="routes to s-0 100.0%",
    ),
    Case(
        "credentials-filter-on-the-hosted-backendref",
        _service(("primary", 0), ("hosted", 1)),
        [
            _endpoint("p-0", "primary"),
            _endpoint("openai", "hosted", url="https://api.openai.com/v1", credentials="openai-credentials"),
        ],
        {"p-0": 1, "openai": 0},
        message="tier 1 (openai) gets the traffic once no tier-0 endpoint is Ready",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_tiers(case: Case) -> None:
    got = _serve(ServiceRunner(), case.xr, [GATEWAY, *case.endpoints])
    composed = _composed(got)
    assert _refs(got) == case.refs
    assert sorted(k for k in composed if k.startswith("fallback-")) == case.fallbacks
    for key in case.fallbacks:
        backend = composed[key]
        assert backend["spec"]["fallback"] is True
        assert backend["metadata"]["name"] == f"llm-{key}"
    if case.traffic:
        spec = composed["traffic"]["spec"]
        assert spec["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "llm"}]
        assert spec["healthCheck"]["passive"]["consecutive5XxErrors"] == 3
        assert spec["retry"]["numAttemptsPerPriority"] == 1
    else:
        assert "traffic" not in composed
    routed = _condition(got, "Routed")
    assert (routed["status"], routed["reason"]) == ("STATUS_CONDITION_TRUE", "Routed")
    assert case.message in routed["message"]
    _assert_valid(got)


def test_credentials_filter_is_on_its_own_backendref_only() -> None:
    case = next(c for c in CASES if c.id == "credentials-filter-on-the-hosted-backendref")
    got = _serve(ServiceRunner(), case.xr, [GATEWAY, *case.endpoints])
    refs = {r["name"]: r for r in _composed(got)["route"]["spec"]["rules"][0]["backendRefs"]}
    assert "filters" not in refs["p-0"]
    assert refs["openai"]["filters"] == [
        {"type": "URLRewrite", "urlRewrite": {"hostname": "api.openai.com"}},
        {
            "type": "ExtensionRef",
            "extensionRef": {"group": "gateway.envoyproxy.io", "kind": "HTTPRouteFilter", "name": "openai-credentials"},
        },
    ]


@pytest.mark.parametrize(
    "tiers",
    [pytest.param((0, 0), id="all-tier-0"), pytest.param((0, None), id="tier-0-and-unset")],
)
def test_a_single_tier_routes_as_before(tiers: tuple[int | None, int | None]) -> None:
    endpoints = [_endpoint("a-0", "a"), _endpoint("b-0", "b", url="https://api.openai.com")]
    unset = _serve(ServiceRunner(), _service(("a", None), ("b", None)), [GATEWAY, *endpoints])
    got = _serve(ServiceRunner(), _service(("a", tiers[0]), ("b", tiers[1])), [GATEWAY, *endpoints])
    assert _composed(got) == _composed(unset)
    assert _condition(got, "Routed") == _condition(unset, "Routed")
    assert sorted(_composed(got)) == ["route", "unavailable"]
    assert _refs(got) == {"a-0": 1, "b-0": 1}


def test_a_fallback_backend_is_kept_while_the_control_plane_routes_to_its_endpoint() -> None:
    # Envoy was failing over to b-0 through the copy; now the control plane sends b-0 the traffic
    # through its own Backend. Deleting the copy then could cut requests in flight: it stays.
    copy = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "Backend", "metadata": {"name": "llm-fallback-b-0"}}
    xr = _service(("primary", 0), ("backup", 1))
    endpoints = [_endpoint("p-0", "primary", ready=False), _endpoint("b-0", "backup", url="http://10.0.0.9")]
    got = _serve(ServiceRunner(), xr, [GATEWAY, *endpoints], observed={"fallback-b-0": copy})
    assert _refs(got) == {"p-0": 0, "b-0": 1}
    assert _composed(got)["fallback-b-0"] == copy
    # Once the service no longer selects the endpoint, the copy goes.
    got = _serve(ServiceRunner(), _service(("primary", 0)), [GATEWAY, endpoints[0]], observed={"fallback-b-0": copy})
    assert "fallback-b-0" not in _composed(got)


_KEPT_ROUTE = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "llm"}}


@pytest.mark.parametrize(
    ("tiers", "reason", "message"),
    [
        pytest.param(
            (0, 2),
            "InvalidSpec",
            "spec.endpoints[1].tier: 2, but no entry has tier 1: tiers count up from 0 without gaps",
            id="gap",
        ),
        pytest.param((1,), "InvalidSpec", "spec.endpoints[0].tier: 1, but no entry has tier 0", id="no-primary"),
        pytest.param(
            (0, 1, 2),
            "UnsupportedTiers",
            "spec.endpoints[2].tier: 2: the service has 3 tiers, and Envoy Gateway's Backend fallback gives 2 "
            "(a primary and one fallback); more need the InferenceGateway's spec.aiGateway: Enabled",
            id="three-tiers-without-the-ai-gateway",
        ),
    ],
)
def test_bad_tiers_keep_the_route_and_name_the_field(tiers: tuple[int, ...], reason: str, message: str) -> None:
    # Admitted before the XRD's rule (gaps), or valid but more than Envoy Gateway's two levels.
    xr = _service(*((f"app-{i}", t) for i, t in enumerate(tiers)))
    observed: dict[str, dict[str, Any]] = {"route": _KEPT_ROUTE, "traffic": {"kind": "BackendTrafficPolicy"}}
    got = _serve(ServiceRunner(), xr, [GATEWAY, _endpoint("e-0", "app-0")], observed=observed)
    assert _composed(got) == observed
    routed = _condition(got, "Routed")
    assert (routed["status"], routed["reason"]) == ("STATUS_CONDITION_FALSE", reason)
    assert message in routed["message"]
    assert any(r["severity"] == "SEVERITY_WARNING" for r in got.get("results", []))


_AI_GATEWAY = {**GATEWAY, "spec": {"aiGateway": "Enabled"}}


@pytest.mark.parametrize(
    ("ready", "refs"),
    [
        pytest.param(
            {"p-0": True, "b-0": True, "h-0": True},
            {"llm-ai-p-0": (1, 0), "llm-ai-b-0": (1, 1), "llm-ai-h-0": (1, 2)},
            id="all-ready-every-tier-by-priority",
        ),
        pytest.param(
            {"p-0": False, "b-0": True, "h-0": True},
            {"llm-ai-p-0": (0, 0), "llm-ai-b-0": (1, 1), "llm-ai-h-0": (1, 2)},
            id="primary-down-its-weight-0",
        ),
        pytest.param(
            {"p-0": False, "b-0": False, "h-0": True},
            {"llm-ai-p-0": (0, 0), "llm-ai-b-0": (0, 1), "llm-ai-h-0": (1, 2)},
            id="only-the-last-tier-ready",
        ),
    ],
)
def test_three_tiers_through_the_ai_gateway_are_priorities(
    ready: dict[str, bool], refs: dict[str, tuple[int, int]]
) -> None:
    # More tiers than Envoy Gateway's two: an AIGatewayRoute whose backendRefs carry each tier's rank.
    xr = _service(("primary", 0), ("backup", 1), ("hosted", 2))
    endpoints = [
        _endpoint("p-0", "primary", ready=ready["p-0"]),
        _endpoint("b-0", "backup", url="http://10.0.0.9", ready=ready["b-0"]),
        _endpoint("h-0", "hosted", url="https://api.example.com/v1", ready=ready["h-0"]),
    ]
    got = _serve(ServiceRunner(), xr, [_AI_GATEWAY, *endpoints])
    composed = _composed(got)
    rule = composed["ai-route"]["spec"]["rules"][0]
    assert {r["name"]: (r["weight"], r["priority"]) for r in rule["backendRefs"]} == refs
    assert "route" not in composed
    assert not [k for k in composed if k.startswith("fallback-")]
    traffic = composed["traffic"]["spec"]
    assert {"healthCheck", "retry"} <= set(traffic)
    routed = _condition(got, "Routed")
    assert routed["status"] == "STATUS_CONDITION_TRUE", routed
    _assert_valid(got)


def _hosted_endpoint(name: str, app: str, header: str | None) -> dict[str, Any]:
    """A hosted API's endpoint with spec.credentials whose Secret was found (its filter published)."""
    out = _endpoint(name, app, url="https://api.example.com/v1", credentials=f"{name}-credentials")
    credentials: dict[str, Any] = {"secretRef": {"name": f"{name}-key"}}
    if header:
        credentials["header"] = header
    out["spec"]["credentials"] = credentials
    return out


@pytest.mark.parametrize(
    ("header", "policy", "weight"),
    [
        pytest.param(None, {"type": "APIKey", "apiKey": {"secretRef": {"name": "h-0-key"}}}, 1, id="bearer"),
        pytest.param(
            "x-api-key",
            {"type": "AnthropicAPIKey", "anthropicAPIKey": {"secretRef": {"name": "h-0-key"}}},
            1,
            id="anthropic",
        ),
        pytest.param("X-Custom-Key", None, 0, id="a-header-the-ai-gateway-cannot-inject"),
    ],
)
def test_credentials_through_the_ai_gateway_are_a_backend_security_policy(
    header: str | None, policy: dict[str, Any] | None, weight: int
) -> None:
    # The AIGatewayRoute has no backendRef filters: the hosted tier's key comes from the Secret named
    # by a BackendSecurityPolicy on the service's AIServiceBackend, never as a value.
    xr = _service(("primary", 0), ("backup", 1), ("hosted", 2))
    endpoints = [
        _endpoint("p-0", "primary"),
        _endpoint("b-0", "backup", url="http://10.0.0.9"),
        _hosted_endpoint("h-0", "hosted", header),
    ]
    got = _serve(ServiceRunner(), xr, [_AI_GATEWAY, *endpoints])
    composed = _composed(got)
    refs = {r["name"]: r["weight"] for r in composed["ai-route"]["spec"]["rules"][0]["backendRefs"]}
    assert refs["llm-ai-h-0"] == weight
    if policy is None:
        assert "ai-credentials-h-0" not in composed
        warnings = [r["message"] for r in got.get("results", []) if r["severity"] == "SEVERITY_WARNING"]
        assert any("spec.credentials.header 'X-Custom-Key'" in w for w in warnings), warnings
        assert "spec.credentials.header 'X-Custom-Key'" in _condition(got, "Routed")["message"]
    else:
        spec = composed["ai-credentials-h-0"]["spec"]
        assert spec == {
            "targetRefs": [{"group": "aigateway.envoyproxy.io", "kind": "AIServiceBackend", "name": "llm-ai-h-0"}],
            **policy,
        }
    _assert_valid(got)


def test_two_tiers_stay_on_the_http_route_with_the_ai_gateway_enabled() -> None:
    # Backend fallback serves two tiers; the AI gateway is used only when it must be.
    xr = _service(("primary", 0), ("backup", 1))
    endpoints = [_endpoint("p-0", "primary"), _endpoint("b-0", "backup", url="http://10.0.0.9")]
    got = _serve(ServiceRunner(), xr, [_AI_GATEWAY, *endpoints])
    composed = _composed(got)
    assert "ai-route" not in composed
    assert "fallback-b-0" in composed


# --- ModelEndpoint spec.credentials ---

_ACCEPTED = {"backend": {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}}}


def _hosted(*, header: str | None = None) -> dict[str, Any]:
    credentials: dict[str, Any] = {"secretRef": {"name": "openai-key"}}
    if header:
        credentials["header"] = header
    return {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {"name": "openai", "namespace": "ml"},
        "spec": {"url": "https://api.openai.com/v1", "credentials": credentials},
    }


def _secret(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "openai-key", "namespace": "ml"}, "data": data}


@pytest.mark.parametrize(
    ("xr", "objects", "header", "ready", "reason", "message"),
    [
        pytest.param(
            _hosted(),
            [_secret(credential="QmVhcmVyIHNrLXg=")],
            "Authorization",
            True,
            "CredentialsInjected",
            "the gateway sends Secret openai-key's credential in header Authorization, replacing a client's",
            id="bearer-in-authorization",
        ),
        pytest.param(
            _hosted(header="x-api-key"),
            [_secret(credential="c2steA==")],
            "x-api-key",
            True,
            "CredentialsInjected",
            "in header x-api-key",
            id="anthropic-header",
        ),
        pytest.param(
            _hosted(),
            [],
            "Authorization",
            False,
            "SecretNotFound",
            "spec.credentials.secretRef.name: Secret ml/openai-key not found; the endpoint gets no traffic",
            id="secret-missing",
        ),
        pytest.param(
            _hosted(),
            [_secret(other="eA==")],
            "Authorization",
            False,
            "SecretNotFound",
            "spec.credentials.secretRef.name: Secret ml/openai-key has no key 'credential'",
            id="secret-without-the-credential-key",
        ),
    ],
)
def test_endpoint_credentials(
    xr: dict[str, Any], objects: list[dict[str, Any]], header: str, ready: bool, reason: str, message: str
) -> None:
    got = _serve(EndpointRunner(), xr, objects, observed=_ACCEPTED)
    assert got["requirements"]["resources"]["credentials-secret"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "matchName": "openai-key",
        "namespace": "ml",
    }
    composed = _composed(got)
    # The filter names the Secret; no value is ever copied. It stays composed while the Secret is missing.
    assert composed["credentials"] == {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "HTTPRouteFilter",
        "metadata": {"name": "openai-credentials", "namespace": "ml"},
        "spec": {
            "credentialInjection": {
                "header": header,
                "overwrite": True,
                "credential": {"valueRef": {"name": "openai-key"}},
            }
        },
    }
    assert "backend" in composed
    status = got["desired"]["composite"]["resource"]["status"]
    assert status.get("credentialsFilterName") == ("openai-credentials" if ready else None)
    condition = _condition(got, "CredentialsReady")
    assert condition["reason"] == reason
    assert message in condition["message"]
    assert got["desired"]["composite"]["ready"] == ("READY_TRUE" if ready else "READY_FALSE")
    assert "c2steA" not in str(got) and "QmVhcmVy" not in str(got)
    _assert_valid(got)


def test_endpoint_without_credentials_asks_for_no_secret_and_drops_a_removed_filter() -> None:
    xr = {**_hosted(), "spec": {"url": "https://api.openai.com/v1"}}
    got = _serve(EndpointRunner(), xr, [], observed={**_ACCEPTED, "credentials": {"kind": "HTTPRouteFilter"}})
    assert "credentials-secret" not in got.get("requirements", {}).get("resources", {})
    assert sorted(_composed(got)) == ["backend"]
    assert all(c["type"] != "CredentialsReady" for c in got.get("conditions", []))
    assert got["desired"]["composite"]["ready"] == "READY_TRUE"
