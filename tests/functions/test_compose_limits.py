"""Rate limits: ModelService spec.limits and InferenceGateway spec.rateLimit / spec.aiGateway, run in-process.

What a platform team checks: a service's limits become one BackendTrafficPolicy on its route,
local unless the gateway counts in Redis; per-client limits match the client id the gateway
forwards; token limits route the service through Envoy AI Gateway and are refused, field by field,
on a gateway that cannot count them, keeping whatever was composed before. A gateway with Redis
configures Envoy Gateway's rate-limit service, with aiGateway Enabled installs Envoy AI Gateway, and
names a Redis certificate Secret that does not exist. Every composed object validates against the
Envoy Gateway v1.9.0, Envoy AI Gateway v1.1.0 and Gateway API CRDs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from compose_inference_gateway.fn import FunctionRunner as GatewayRunner
from compose_model_service.fn import FunctionRunner as ServiceRunner
from tests.functions.test_compose_gateway_auth import (
    _ENDPOINT,
    API,
    CLIENT_ID,
    INSTALLED,
    READY,
    _assert_valid,
    _composed,
    _condition,
    _run,
)

REDIS = {"redis": {"address": "redis.redis-system.svc.cluster.local:6379"}}
_ROUTE = [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "llama"}]
_TOKENS_COST = {
    "request": {"from": "Number", "number": 0},
    "response": {
        "from": "Metadata",
        "metadata": {"namespace": "io.envoy.ai_gateway", "key": "modelplane_total_tokens"},
    },
}


def _client(client: str) -> list[dict[str, Any]]:
    return [{"headers": [{"name": CLIENT_ID, "type": "Exact", "value": client}]}]


def _service(limits: list[dict[str, Any]] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"endpoints": [{"selector": {"matchLabels": {"app": "llama"}}, "weight": 1}]}
    if limits is not None:
        spec["limits"] = limits
    return {"apiVersion": API, "kind": "ModelService", "metadata": {"name": "llama", "namespace": "ml"}, "spec": spec}


def _gateway_xr(*, redis: bool = False, ai: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"aiGateway": "Enabled" if ai else "Disabled"}
    if redis:
        spec["rateLimit"] = REDIS
    return {
        "apiVersion": API,
        "kind": "InferenceGateway",
        "metadata": {"name": "default"},
        "spec": spec,
        "status": {"address": "http://203.0.113.10"},
    }


def _traffic(rate_limit: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "BackendTrafficPolicy",
        "metadata": {"name": "llama-traffic", "namespace": "ml"},
        "spec": {"targetRefs": _ROUTE, "rateLimit": rate_limit},
    }


_OLD_RATE_LIMIT = {"local": {"rules": [{"limit": {"requests": 10, "unit": "Minute"}}]}}
_OLD_AI: dict[str, dict[str, Any]] = {
    "ai-route": {
        "apiVersion": "aigateway.envoyproxy.io/v1beta1",
        "kind": "AIGatewayRoute",
        "metadata": {"name": "llama"},
    },
    "ai-backend-llama-a": {"apiVersion": "aigateway.envoyproxy.io/v1beta1", "kind": "AIServiceBackend"},
}


@dataclass(frozen=True)
class ServiceCase:
    """One spec.limits on a gateway that counts as said, and what the service composes and says."""

    limits: list[dict[str, Any]] | None
    redis: bool = False
    ai: bool = False
    observed: dict[str, dict[str, Any]] = field(default_factory=dict)
    rate_limit: dict[str, Any] | None = None  # the BackendTrafficPolicy's rateLimit; None: no policy
    ai_route: bool = False  # routed through an AIGatewayRoute (no HTTPRoute)
    status: str | None = "True"  # the Limited condition's status; None: no condition
    messages: tuple[str, ...] = ()


SERVICE_CASES = [
    pytest.param(
        ServiceCase(
            [{"requestsPerMinute": 60}],
            rate_limit={"local": {"rules": [{"limit": {"requests": 60, "unit": "Minute"}}]}},
            messages=("local (counted per Envoy replica)",),
        ),
        id="requests-shared-by-every-caller-local",
    ),
    pytest.param(
        ServiceCase(
            [{"clients": ["team-b", "team-a"], "requestsPerMinute": 30}],
            rate_limit={
                "local": {
                    "rules": [
                        {"clientSelectors": _client("team-a"), "limit": {"requests": 30, "unit": "Minute"}},
                        {"clientSelectors": _client("team-b"), "limit": {"requests": 30, "unit": "Minute"}},
                    ]
                }
            },
        ),
        id="requests-per-client-one-rule-each",
    ),
    pytest.param(
        ServiceCase(
            [{"requestsPerMinute": 600}, {"clients": ["batch"], "requestsPerMinute": 10}],
            redis=True,
            rate_limit={
                "global": {
                    "rules": [
                        {"limit": {"requests": 600, "unit": "Minute"}},
                        {"clientSelectors": _client("batch"), "limit": {"requests": 10, "unit": "Minute"}},
                    ]
                }
            },
            messages=("global (counted in Redis)",),
        ),
        id="redis-makes-limits-global",
    ),
    pytest.param(
        ServiceCase(
            [{"clients": ["team-a"], "requestsPerMinute": 60, "tokensPerMinute": 100000}],
            redis=True,
            ai=True,
            rate_limit={
                "global": {
                    "rules": [
                        {"clientSelectors": _client("team-a"), "limit": {"requests": 60, "unit": "Minute"}},
                        {
                            "clientSelectors": _client("team-a"),
                            "limit": {"requests": 100000, "unit": "Minute"},
                            "cost": _TOKENS_COST,
                        },
                    ]
                }
            },
            ai_route=True,
            messages=("tokens are counted by Envoy AI Gateway", "x-modelplane-service: ml/llama"),
        ),
        id="tokens-route-through-the-ai-gateway",
    ),
    pytest.param(
        ServiceCase(
            [{"tokensPerMinute": 1000}],
            redis=True,
            status="False",
            messages=("spec.limits[0].tokensPerMinute: the InferenceGateway's spec.aiGateway is not Enabled",),
        ),
        id="tokens-without-ai-gateway-refused",
    ),
    pytest.param(
        ServiceCase(
            [{"requestsPerMinute": 5}, {"tokensPerMinute": 1000}],
            ai=True,
            status="False",
            messages=("spec.limits[1].tokensPerMinute: the InferenceGateway sets no spec.rateLimit.redis",),
        ),
        id="tokens-without-redis-refused-whole",
    ),
    pytest.param(
        ServiceCase(
            [{"tokensPerMinute": 1000}],
            observed={"traffic": _traffic(_OLD_RATE_LIMIT)},
            rate_limit=_OLD_RATE_LIMIT,
            status="False",
            messages=("spec.aiGateway is not Enabled", "spec.rateLimit.redis", "the ones composed before stay"),
        ),
        id="refused-keeps-the-limits-composed-before",
    ),
    pytest.param(
        ServiceCase(
            [{"tokensPerMinute": 1000}],
            redis=True,
            observed=_OLD_AI,
            ai_route=True,
            status="False",
            messages=("spec.aiGateway is not Enabled",),
        ),
        id="refused-keeps-the-ai-route-composed-before",
    ),
    pytest.param(
        ServiceCase(
            [{"clients": [f"c{i}" for i in range(9)], "requestsPerMinute": 1, "tokensPerMinute": 1}],
            redis=False,
            ai=True,
            status="False",
            messages=("spec.limits: 18 rules", "more than the 16 Envoy Gateway takes for local limits"),
        ),
        id="too-many-local-rules-refused",
    ),
    pytest.param(
        ServiceCase(
            None,
            observed={"traffic": _traffic(_OLD_RATE_LIMIT), **_OLD_AI},
            status=None,
        ),
        id="no-limits-removes-policy-and-ai-route",
    ),
]


@pytest.mark.parametrize("case", SERVICE_CASES)
def test_service_limits(case: ServiceCase) -> None:
    required = {"gateway": [_gateway_xr(redis=case.redis, ai=case.ai)], "endpoints-0": [_ENDPOINT]}
    got = _run(ServiceRunner(), _service(case.limits), required=required, observed=case.observed)
    composed = _composed(got)
    if case.rate_limit is None:
        assert "traffic" not in composed
    else:
        policy = composed["traffic"]
        assert policy["kind"] == "BackendTrafficPolicy"
        assert policy["metadata"] == {"name": "llama-traffic", "namespace": "ml"}
        # The HTTPRoute the service composes, or the one Envoy AI Gateway generates with the same name.
        assert policy["spec"] == {"targetRefs": _ROUTE, "rateLimit": case.rate_limit}
    # The service is routed either way: by its HTTPRoute, or by its AIGatewayRoute.
    assert ("ai-route" in composed, "route" in composed) == (case.ai_route, not case.ai_route)
    assert "unavailable" in composed
    if case.status is None:
        assert not any(c["type"] == "Limited" for c in got.get("conditions", []))
        assert not any("kept" in r["message"] for r in got.get("results", [])), got.get("results")
    else:
        condition = _condition(got, "Limited")
        assert condition["status"] == f"STATUS_CONDITION_{case.status.upper()}"
        assert condition["reason"] == ("Limited" if case.status == "True" else "LimitsRefused")
        for message in case.messages:
            assert message in condition["message"]
        if case.status == "False":
            assert any(case.messages[0] in r["message"] for r in got.get("results", [])), got.get("results")
    assert _condition(got, "Routed")["status"] == "STATUS_CONDITION_TRUE"
    if not case.observed:
        _assert_valid(got)


def test_service_with_token_limits_composes_an_ai_gateway_route() -> None:
    limits = [{"tokensPerMinute": 5000}]
    required = {"gateway": [_gateway_xr(redis=True, ai=True)], "endpoints-0": [_ENDPOINT]}
    got = _run(ServiceRunner(), _service(limits), required=required, observed={"route": {}})
    composed = _composed(got)
    assert composed["ai-route"] == {
        "apiVersion": "aigateway.envoyproxy.io/v1beta1",
        "kind": "AIGatewayRoute",
        "metadata": {"name": "llama", "namespace": "ml"},
        "spec": {
            "parentRefs": [
                {
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "name": "default",
                    "namespace": "envoy-gateway-system",
                }
            ],
            "rules": [
                {
                    "matches": [{"headers": [{"type": "Exact", "name": "x-modelplane-service", "value": "ml/llama"}]}],
                    "timeouts": {"request": "0s"},
                    "backendRefs": [{"name": "llama-ai-llama-a", "weight": 1}],
                }
            ],
            "llmRequestCosts": [{"metadataKey": "modelplane_total_tokens", "type": "TotalToken"}],
        },
    }
    assert composed["ai-backend-llama-a"]["spec"] == {
        "schema": {"name": "OpenAI", "prefix": "/v1"},
        "backendRef": {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "llama-a"},
    }
    # The HTTPRoute composed before gives way to the one Envoy AI Gateway generates with its name.
    assert "route" not in composed
    assert not any("kept" in r["message"] for r in got.get("results", [])), got.get("results")
    # Reached at the gateway's root, naming the service in a header.
    assert got["desired"]["composite"]["resource"]["status"]["address"] == "http://203.0.113.10"
    assert _condition(got, "Routed")["message"].startswith("/v1 with header x-modelplane-service: ml/llama on Gateway")


# --- InferenceGateway spec.rateLimit and spec.aiGateway ---


def _gateway(extra: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"http": {"port": 80}, "auth": {"mode": "None"}, **extra}
    return {"apiVersion": API, "kind": "InferenceGateway", "metadata": {"name": "default"}, "spec": spec}


def _tls_secret(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "envoy-gateway-system"},
        "type": "kubernetes.io/tls",
    }


_TLS = {"redis": {**REDIS["redis"], "secretRef": {"name": "redis-client"}}}
_REDIS_BACKEND: dict[str, Any] = {"type": "Redis", "redis": {"url": "redis.redis-system.svc.cluster.local:6379"}}


@dataclass(frozen=True)
class GatewayCase:
    """One spec.rateLimit / spec.aiGateway, the Secrets that exist, and what the gateway installs and says."""

    spec: dict[str, Any]
    secrets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)  # what is added to config.envoyGateway
    ai_releases: bool = False
    reason: str = "LocalCounters"
    status: str = "True"
    message: str = ""
    ready: bool = True


GATEWAY_CASES = [
    pytest.param(GatewayCase({}, message="each Envoy replica counts ModelService limits on its own"), id="local"),
    pytest.param(
        GatewayCase(
            {"rateLimit": REDIS},
            config={"rateLimit": {"backend": _REDIS_BACKEND}},
            reason="RedisCounters",
            message="global, counted in Redis at redis.redis-system.svc.cluster.local:6379; token limits need",
        ),
        id="redis",
    ),
    pytest.param(
        GatewayCase(
            {"rateLimit": _TLS},
            {"redis-certificate": [_tls_secret("redis-client")]},
            config={
                "rateLimit": {
                    "backend": {
                        "type": "Redis",
                        "redis": {
                            **_REDIS_BACKEND["redis"],
                            "tls": {
                                "certificateRef": {
                                    "group": "",
                                    "kind": "Secret",
                                    "name": "redis-client",
                                    "namespace": "envoy-gateway-system",
                                }
                            },
                        },
                    }
                }
            },
            reason="RedisCounters",
            message="with TLS",
        ),
        id="redis-tls",
    ),
    pytest.param(
        GatewayCase(
            {"rateLimit": _TLS},
            {"redis-certificate": []},
            config={"rateLimit": {"backend": {"type": "Redis"}}},
            reason="SecretNotFound",
            status="False",
            message="spec.rateLimit.redis.secretRef.name: Secret envoy-gateway-system/redis-client not found",
            ready=False,
        ),
        id="unknown-redis-secret-composes-everything-and-is-not-ready",
    ),
    pytest.param(
        GatewayCase(
            {"rateLimit": _TLS},
            config={"rateLimit": {"backend": {"type": "Redis"}}},
            reason="WaitingForInputs",
            status="Unknown",
            message="reading the Redis certificate Secret",
        ),
        id="redis-secret-not-fetched-yet",
    ),
    pytest.param(
        GatewayCase(
            {"rateLimit": REDIS, "aiGateway": "Enabled"},
            config={"rateLimit": {"backend": _REDIS_BACKEND}, "extensionManager": {}},
            ai_releases=True,
            reason="RedisCounters",
            message="ModelService token limits are counted",
        ),
        id="ai-gateway-installed-beside-envoy-gateway",
    ),
]


@pytest.mark.parametrize("case", GATEWAY_CASES)
def test_gateway_rate_limit(case: GatewayCase) -> None:
    installed = {"status": {"conditions": READY}}
    observed = {**INSTALLED, "ai-gateway-crds": installed, "ai-gateway": installed}
    got = _run(GatewayRunner(), _gateway(case.spec), observed=observed, required=case.secrets)
    composed = _composed(got)
    values = composed["envoy-gateway"]["spec"]["forProvider"]["values"]["config"]["envoyGateway"]
    # The Backend API ModelEndpoints compose stays enabled whatever else is added.
    assert values["extensionApis"]["enableBackend"] is True
    for key, want in case.config.items():
        assert key in values, values
        if want.get("backend", {}).get("redis"):
            assert values[key] == want
    if not case.config:
        assert "rateLimit" not in values
    if case.ai_releases:
        assert values["extensionManager"]["service"]["fqdn"]["port"] == 1063
        crds, controller = composed["ai-gateway-crds"], composed["ai-gateway"]
        assert crds["spec"]["forProvider"]["chart"] == {
            "name": "ai-gateway-crds-helm",
            "repository": "oci://docker.io/envoyproxy",
            "version": "v1.1.0",
        }
        assert controller["spec"]["forProvider"]["chart"]["name"] == "ai-gateway-helm"
        assert controller["spec"]["forProvider"]["namespace"] == "envoy-ai-gateway-system"
        assert controller["metadata"] == {"name": "default-envoy-ai-gateway", "namespace": "crossplane-system"}
    else:
        # Turned off: the releases composed before are removed, on purpose, not kept.
        assert "ai-gateway" not in composed
        assert "ai-gateway-crds" not in composed
        assert "extensionManager" not in values
    assert {"gateway-class", "gateway", "client-id"} <= set(composed)
    condition = _condition(got, "RateLimitReady")
    assert (condition["status"], condition["reason"]) == (f"STATUS_CONDITION_{case.status.upper()}", case.reason)
    assert case.message in condition["message"]
    assert got["desired"]["composite"]["ready"] == ("READY_TRUE" if case.ready else "READY_FALSE")
    if case.reason == "SecretNotFound":
        assert any(case.message in r["message"] for r in got.get("results", [])), got.get("results")
    _assert_valid(got)


def test_gateway_asks_for_the_redis_certificate_by_name() -> None:
    got = _run(GatewayRunner(), _gateway({"rateLimit": _TLS}), observed=INSTALLED)
    assert got["requirements"]["resources"]["redis-certificate"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "matchName": "redis-client",
        "namespace": "envoy-gateway-system",
    }


def test_gateway_ai_releases_wait_for_envoy_gateway() -> None:
    # The AI gateway registers with Envoy Gateway: nothing but Envoy Gateway's Release before it is Ready.
    got = _run(GatewayRunner(), _gateway({"aiGateway": "Enabled"}))
    assert sorted(_composed(got)) == ["envoy-gateway"]
