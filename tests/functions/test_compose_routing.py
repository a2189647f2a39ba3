"""compose-inference-gateway, compose-model-endpoint and compose-model-service, run in-process."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import xrds
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_inference_gateway.fn import FunctionRunner as GatewayRunner
from compose_model_endpoint.fn import FunctionRunner as EndpointRunner
from compose_model_service.fn import FunctionRunner as ServiceRunner
from modelplane.render.store import Store

API = "modelplane.ai/v1alpha1"
READY = [{"type": "Ready", "status": "True"}]


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
    rsp = asyncio.run(runner.RunFunction(req, None))
    got: dict[str, Any] = json_format.MessageToDict(rsp)
    return got


def _serve(
    runner: Any,
    xr: dict[str, Any],
    objects: list[dict[str, Any]],
    *,
    observed: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Call ``runner`` as Crossplane does: once, then again with its requirements answered from ``objects``."""
    first = _run(runner, xr, observed=observed)
    store, required = Store(objects), {}
    for name, selector in first.get("requirements", {}).get("resources", {}).items():
        found = store.fetch(json_format.ParseDict(selector, fnv1.ResourceSelector()))
        required[name] = [resource.struct_to_dict(item.resource) for item in found.items]
    return _run(runner, xr, observed=observed, required=required)


def _condition(got: dict[str, Any], typ: str) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == typ)


def _composed(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}


def _assert_valid(got: dict[str, Any]) -> None:
    for key, obj in _composed(got).items():
        result = xrds.validate(obj)
        assert result.ok, f"{key}: {result.errors}"


# --- InferenceGateway ---


def _gateway_xr(*, https: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"gatewayClassName": "modelplane", "http": {"port": 8080}}
    if https:
        spec["https"] = {"port": 443, "certificateRef": {"namespace": "crossplane-system", "name": "tls"}}
    return {"apiVersion": API, "kind": "InferenceGateway", "metadata": {"name": "default"}, "spec": spec}


@pytest.mark.parametrize(
    ("observed", "composed_keys", "reason"),
    [
        pytest.param({}, ["envoy-gateway"], "WaitingForDependencies", id="release-first"),
        pytest.param(
            {"envoy-gateway": {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}},
            ["envoy-gateway"],
            "WaitingForDependencies",
            id="release-installing",
        ),
        pytest.param(
            {"envoy-gateway": {"status": {"conditions": READY}}},
            ["client-id", "envoy-gateway", "gateway", "gateway-class"],
            "WaitingForAddress",
            id="release-ready",
        ),
        pytest.param(
            {"envoy-gateway": {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "gateway": {}},
            ["envoy-gateway", "gateway"],
            "WaitingForAddress",
            id="existing-gateway-kept-while-release-unready",
        ),
    ],
)
def test_gateway_composes_release_then_class_and_gateway(
    observed: dict[str, Any], composed_keys: list[str], reason: str
) -> None:
    # The Release creates envoy-gateway-system and the Gateway API CRDs: a Gateway applied before
    # it is Ready is refused by the API server, and that refusal stops Crossplane applying the rest.
    got = _run(GatewayRunner(), _gateway_xr(), observed=observed)
    composed = _composed(got)
    assert sorted(composed) == composed_keys
    release = composed["envoy-gateway"]
    assert release["metadata"] == {"name": "default-envoy-gateway", "namespace": "crossplane-system"}
    assert release["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": "in-cluster"}
    if "gateway-class" in composed:
        assert composed["gateway-class"]["spec"] == {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}
    if "gateway" in composed:
        listeners = composed["gateway"]["spec"]["listeners"]
        assert [(li["name"], li["port"]) for li in listeners] == [("http", 8080)]
    programmed = _condition(got, "Programmed")
    assert programmed["reason"] == reason
    if reason == "WaitingForDependencies":
        assert "default-envoy-gateway" in programmed["message"], programmed
    assert got["desired"]["composite"]["ready"] == "READY_FALSE"
    _assert_valid(got)


def test_gateway_https_and_address_from_the_observed_gateway() -> None:
    observed = {
        "envoy-gateway": {"status": {"conditions": READY}},
        "gateway-class": {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}},
        "gateway": {
            "status": {
                "addresses": [{"type": "IPAddress", "value": "203.0.113.10"}],
                "conditions": [{"type": "Programmed", "status": "True"}],
            }
        },
        "certificate-grant": {},
        "client-id": {},
    }
    got = _run(GatewayRunner(), _gateway_xr(https=True), observed=observed)
    composed = _composed(got)
    assert composed["gateway"]["spec"]["listeners"][1]["tls"]["certificateRefs"] == [
        {"group": "", "kind": "Secret", "name": "tls", "namespace": "crossplane-system"}
    ]
    assert composed["certificate-grant"]["metadata"]["namespace"] == "crossplane-system"
    status = got["desired"]["composite"]["resource"]["status"]
    assert status == {
        "readyVerdict": True,
        "address": "http://203.0.113.10:8080",
        "gateway": {"name": "default", "namespace": "envoy-gateway-system"},
    }
    assert _condition(got, "Programmed")["reason"] == "Programmed"
    assert got["desired"]["composite"]["ready"] == "READY_TRUE"
    _assert_valid(got)


# --- ModelEndpoint ---


def _endpoint_xr(url: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {"name": "ep", "namespace": "ml"},
        "spec": {"url": url},
    }


@pytest.mark.parametrize(
    ("url", "endpoint", "tls"),
    [
        pytest.param(
            "https://api.openai.com/v1",
            {"fqdn": {"hostname": "api.openai.com", "port": 443}},
            {"wellKnownCACertificates": "System", "sni": "api.openai.com"},
            id="https-dns",
        ),
        pytest.param("http://10.0.0.7:8000/ml/x", {"ip": {"address": "10.0.0.7", "port": 8000}}, None, id="http-ipv4"),
        pytest.param(
            "https://[fd00::1]",
            {"ip": {"address": "fd00::1", "port": 443}},
            {"wellKnownCACertificates": "System"},
            id="https-ipv6",
        ),
    ],
)
def test_endpoint_backend(url: str, endpoint: dict[str, Any], tls: dict[str, Any] | None) -> None:
    got = _run(EndpointRunner(), _endpoint_xr(url))
    backend = _composed(got)["backend"]
    assert backend["metadata"] == {"name": "ep", "namespace": "ml"}
    assert backend["spec"]["endpoints"] == [endpoint]
    assert backend["spec"].get("tls") == tls
    assert got["desired"]["composite"]["resource"]["status"] == {"backendName": "ep", "readyVerdict": False}
    assert _condition(got, "Valid")["reason"] == "Valid"
    assert got["desired"]["composite"]["ready"] == "READY_FALSE"  # not Accepted yet
    _assert_valid(got)


def test_endpoint_ready_once_the_backend_is_accepted() -> None:
    observed = {"backend": {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}}}
    got = _run(EndpointRunner(), _endpoint_xr("http://gw.example"), observed=observed)
    assert got["desired"]["resources"]["backend"]["ready"] == "READY_TRUE"
    assert got["desired"]["composite"]["ready"] == "READY_TRUE"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        pytest.param("http://256.0.0.1", "spec.url: '256.0.0.1' is not a valid IPv4 address", id="ipv4"),
        pytest.param("http://gw.example:70000", "spec.url: port '70000'", id="port"),
        pytest.param("ftp://gw.example", "spec.url", id="scheme-refused-by-the-schema"),
    ],
)
def test_malformed_url_is_a_condition_and_keeps_the_backend(url: str, problem: str) -> None:
    kept = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "Backend", "metadata": {"name": "ep"}}
    got = _run(EndpointRunner(), _endpoint_xr(url), observed={"backend": kept})
    valid = _condition(got, "Valid")
    assert (valid["status"], valid["reason"]) == ("STATUS_CONDITION_FALSE", "InvalidURL")
    assert problem in valid["message"]
    assert _composed(got) == {"backend": kept}
    assert got["results"][0]["severity"] == "SEVERITY_WARNING"


# --- ModelService ---

GATEWAY = {
    "apiVersion": API,
    "kind": "InferenceGateway",
    "metadata": {"name": "default"},
    "status": {"address": "http://203.0.113.10"},
}


def _service_xr(*entries: tuple[dict[str, str], int]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ModelService",
        "metadata": {"name": "llm", "namespace": "ml"},
        "spec": {"endpoints": [{"selector": {"matchLabels": labels}, "weight": w} for labels, w in entries]},
    }


def _endpoint(
    name: str,
    deployment: str,
    *,
    ready: bool = True,
    url: str = "http://10.0.0.1",
    rewrite: str | None = None,
    host: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"url": url}
    if rewrite:
        spec["rewritePath"] = rewrite
    if host:
        spec["host"] = host
    return {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "labels": {"modelplane.ai/deployment": deployment},
            # Composed by its deployment: Crossplane sets the deployment as controller.
            "ownerReferences": [
                {"apiVersion": API, "kind": "ModelDeployment", "name": deployment, "uid": "u", "controller": True}
            ],
        },
        "spec": spec,
        "status": {"backendName": name, "conditions": READY if ready else []},
    }


FP8 = ({"modelplane.ai/deployment": "fp8"}, 90)
BF16 = ({"modelplane.ai/deployment": "bf16"}, 10)


def _refs(got: dict[str, Any]) -> dict[str, int]:
    rule = _composed(got)["route"]["spec"]["rules"][0]
    return {r["name"]: r["weight"] for r in rule.get("backendRefs", [])}


def test_service_canary_route() -> None:
    endpoints = [_endpoint("fp8-0", "fp8"), _endpoint("fp8-1", "fp8"), _endpoint("bf16-0", "bf16")]
    got = _serve(ServiceRunner(), _service_xr(FP8, BF16), [GATEWAY, *endpoints])
    assert got["requirements"]["resources"] == {
        "gateway": {"apiVersion": API, "kind": "InferenceGateway", "matchName": "default"},
        # matchLabels-only selectors: Crossplane sends each entry's endpoints, not the namespace's.
        **{
            f"endpoints-{i}": {
                "apiVersion": API,
                "kind": "ModelEndpoint",
                "matchLabels": {"labels": {"modelplane.ai/deployment": deployment}},
                "namespace": "ml",
            }
            for i, deployment in enumerate(("fp8", "bf16"))
        },
    }
    route = _composed(got)["route"]
    assert route["spec"]["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": "default",
            "namespace": "envoy-gateway-system",
        }
    ]
    rule = route["spec"]["rules"][0]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/ml/llm"}}]
    assert rule["filters"] == [
        {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}
    ]
    assert rule["timeouts"] == {"request": "0s"}
    assert _refs(got) == {"bf16-0": 2, "fp8-0": 9, "fp8-1": 9}
    status = got["desired"]["composite"]["resource"]["status"]
    assert status["address"] == "http://203.0.113.10/ml/llm"
    assert status["matchedEndpoints"] == 3
    assert [(e["matched"], e["endpoints"]) for e in status["endpoints"]] == [(2, ["fp8-0", "fp8-1"]), (1, ["bf16-0"])]
    assert _condition(got, "Routed")["reason"] == "Routed"
    _assert_valid(got)


def _not_serving(endpoint: dict[str, Any]) -> dict[str, Any]:
    """An endpoint its deployment keeps while its replica does not serve."""
    return {**endpoint, "metadata": {**endpoint["metadata"], "annotations": {"modelplane.ai/serving": "false"}}}


@pytest.mark.parametrize(
    "idle",
    [
        pytest.param(_endpoint("fp8-1", "fp8", ready=False), id="endpoint-not-ready"),
        pytest.param(_not_serving(_endpoint("fp8-1", "fp8")), id="replica-not-serving"),
    ],
)
def test_service_gives_endpoints_that_do_not_serve_weight_0_and_skips_other_namespaces(idle: dict[str, Any]) -> None:
    other = {
        **_endpoint("fp8-9", "fp8"),
        "metadata": {"name": "fp8-9", "namespace": "other", "labels": {"modelplane.ai/deployment": "fp8"}},
    }
    endpoints = [_endpoint("fp8-0", "fp8"), idle, _endpoint("bf16-0", "bf16"), other]
    got = _serve(ServiceRunner(), _service_xr(FP8, BF16), [GATEWAY, *endpoints])
    # The idle endpoint keeps its place in the route (its Backend stays referenced), with no traffic.
    assert _refs(got) == {"bf16-0": 1, "fp8-0": 9, "fp8-1": 0}
    status = got["desired"]["composite"]["resource"]["status"]
    assert status["endpoints"][0]["matched"] == 2
    assert status["matchedEndpoints"] == 2
    assert "fp8-1" not in _condition(got, "Routed")["message"]
    _assert_valid(got)


def test_service_leaves_out_endpoints_without_a_backend() -> None:
    fresh = _endpoint("fp8-1", "fp8", ready=False)
    fresh["status"] = {}
    endpoints = [_endpoint("fp8-0", "fp8"), fresh]
    got = _serve(ServiceRunner(), _service_xr(FP8), [GATEWAY, *endpoints])
    assert _refs(got) == {"fp8-0": 1}


def test_service_external_endpoint_gets_its_host_header() -> None:
    endpoints = [_endpoint("fp8-0", "fp8"), _endpoint("saas", "bf16", url="https://api.openai.com/v1")]
    got = _serve(ServiceRunner(), _service_xr(FP8, BF16), [GATEWAY, *endpoints])
    refs = _composed(got)["route"]["spec"]["rules"][0]["backendRefs"]
    assert refs[1]["filters"] == [{"type": "URLRewrite", "urlRewrite": {"hostname": "api.openai.com"}}]
    assert "filters" not in refs[0]
    _assert_valid(got)


def test_service_canary_over_replicas_sharing_a_gateway_rewrites_each_host() -> None:
    # Replicas on one workload cluster share its gateway's address and are told apart by Host;
    # every one is served at the root, so the path rewrite stays one rule-level filter.
    endpoints = [
        _endpoint("fp8-0", "fp8", url="http://203.0.113.7/", host="fp8-0.ml.replicas.modelplane.ai"),
        _endpoint("fp8-1", "fp8", url="http://gw.east.example/", host="fp8-1.ml.replicas.modelplane.ai"),
        _endpoint("bf16-0", "bf16", url="http://203.0.113.7/", host="bf16-0.ml.replicas.modelplane.ai"),
    ]
    got = _serve(ServiceRunner(), _service_xr(FP8, BF16), [GATEWAY, *endpoints])
    rule = _composed(got)["route"]["spec"]["rules"][0]
    assert rule["filters"] == [
        {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}
    ]
    assert {r["name"]: r["filters"] for r in rule["backendRefs"]} == {
        name: [{"type": "URLRewrite", "urlRewrite": {"hostname": f"{name}.ml.replicas.modelplane.ai"}}]
        for name in ("bf16-0", "fp8-0", "fp8-1")
    }
    assert _condition(got, "Routed")["reason"] == "Routed"
    _assert_valid(got)


def test_service_mixed_rewrite_paths_use_backend_filters_and_say_envoy_gateway_cannot() -> None:
    endpoints = [_endpoint("fp8-0", "fp8", rewrite="/a"), _endpoint("bf16-0", "bf16", rewrite="/b")]
    got = _serve(ServiceRunner(), _service_xr(FP8, BF16), [GATEWAY, *endpoints])
    rule = _composed(got)["route"]["spec"]["rules"][0]
    assert "filters" not in rule
    assert [r["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] for r in rule["backendRefs"]] == ["/b", "/a"]
    routed = _condition(got, "Routed")
    assert (routed["status"], routed["reason"]) == ("STATUS_CONDITION_FALSE", "UnsupportedRewrite")
    _assert_valid(got)


_UNAVAILABLE_BODY = (
    '{"error": {"code": 503, "message": "ModelService ml/llm has no Ready endpoint: its deployments may be scaled '
    'to zero (spec.replicas 0) or still starting; retry later", "type": "service_unavailable"}}'
)


@pytest.mark.parametrize(
    "endpoints",
    [
        pytest.param([], id="scaled-to-zero-no-endpoint"),
        pytest.param([_endpoint("fp8-0", "fp8", ready=False)], id="none-ready-yet"),
    ],
)
def test_service_with_no_serving_endpoint_answers_503(endpoints: list[dict[str, Any]]) -> None:
    got = _serve(ServiceRunner(), _service_xr(FP8), [GATEWAY, *endpoints])
    composed = _composed(got)
    # The route stays (its address with it) and sends every request to the direct 503, no backend.
    assert composed["route"]["spec"]["rules"] == [
        {
            "matches": [{"path": {"type": "PathPrefix", "value": "/ml/llm"}}],
            "filters": [
                {
                    "type": "ExtensionRef",
                    "extensionRef": {
                        "group": "gateway.envoyproxy.io",
                        "kind": "HTTPRouteFilter",
                        "name": "llm-unavailable",
                    },
                }
            ],
            "timeouts": {"request": "0s"},
        }
    ]
    assert composed["unavailable"] == {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "HTTPRouteFilter",
        "metadata": {"name": "llm-unavailable", "namespace": "ml"},
        "spec": {
            "directResponse": {
                "statusCode": 503,
                "contentType": "application/json",
                "body": {"type": "Inline", "inline": _UNAVAILABLE_BODY},
                "header": {"add": [{"name": "Retry-After", "value": "30"}]},
            }
        },
    }
    routed = _condition(got, "Routed")
    assert (routed["status"], routed["reason"]) == ("STATUS_CONDITION_FALSE", "NoEndpoints")
    assert "answers 503 (its HTTPRouteFilter llm-unavailable)" in routed["message"]
    assert got["desired"]["composite"]["ready"] == "READY_FALSE"
    _assert_valid(got)


def test_a_serving_service_keeps_its_503_filter_unreferenced() -> None:
    got = _serve(ServiceRunner(), _service_xr(FP8), [GATEWAY, _endpoint("fp8-0", "fp8")])
    composed = _composed(got)
    assert composed["unavailable"]["kind"] == "HTTPRouteFilter"
    assert got["desired"]["resources"]["unavailable"]["ready"] == "READY_TRUE"
    rule = composed["route"]["spec"]["rules"][0]
    assert [f["type"] for f in rule["filters"]] == ["URLRewrite"]
    assert _refs(got) == {"fp8-0": 1}


def test_service_missing_gateway_keeps_the_observed_route() -> None:
    kept = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "llm"}}
    got = _serve(
        ServiceRunner(),
        _service_xr(FP8),
        [_endpoint("fp8-0", "fp8")],
        observed={"route": {**kept, "status": {"parents": []}}},
    )
    assert _composed(got) == {"route": kept}
    routed = _condition(got, "Routed")
    assert (routed["status"], routed["reason"]) == ("STATUS_CONDITION_FALSE", "GatewayNotFound")
    assert "'default' (spec.gatewayRef.name)" in routed["message"]


def test_service_waits_for_its_requirements() -> None:
    got = _run(ServiceRunner(), _service_xr(FP8))
    assert _condition(got, "Routed")["reason"] == "WaitingForGateway"
    assert "resources" not in got.get("desired", {})


def test_service_ready_when_the_gateway_accepts_the_route() -> None:
    parents = [
        {
            "parentRef": {"name": "default", "namespace": "envoy-gateway-system"},
            "conditions": [{"type": "Accepted", "status": "True"}, {"type": "ResolvedRefs", "status": "True"}],
        }
    ]
    got = _serve(
        ServiceRunner(),
        _service_xr(FP8),
        [GATEWAY, _endpoint("fp8-0", "fp8")],
        observed={"route": {"status": {"parents": parents}}},
    )
    assert got["desired"]["resources"]["route"]["ready"] == "READY_TRUE"
    assert got["desired"]["composite"]["ready"] == "READY_TRUE"


def _malformed(endpoint: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**endpoint, **fields}


_EXPRESSIONS = {"matchExpressions": [{"key": "modelplane.ai/deployment", "operator": "In", "values": ["fp8"]}]}
_WHOLE_NAMESPACE = {"apiVersion": API, "kind": "ModelEndpoint", "matchLabels": {}, "namespace": "ml"}


@pytest.mark.parametrize(
    ("selectors", "endpoints", "asked", "routed", "warned"),
    [
        pytest.param(
            [_EXPRESSIONS],
            [_endpoint("fp8-0", "fp8"), _malformed(_endpoint("bf16-0", "bf16"), spec=["not", "an", "object"])],
            {"endpoints": _WHOLE_NAMESPACE},
            {"fp8-0": 1},
            [],
            id="expressions-read-the-namespace-and-only-matched-endpoints-whole",
        ),
        pytest.param(
            [_EXPRESSIONS],
            [_endpoint("fp8-0", "fp8"), _malformed(_endpoint("fp8-1", "fp8"), spec=["not", "an", "object"])],
            {"endpoints": _WHOLE_NAMESPACE},
            {"fp8-0": 1, "fp8-1": 0},  # kept, without traffic
            ["required resource ModelEndpoint ml/fp8-1 is malformed"],
            id="a-matched-endpoint-that-does-not-fit-is-named",
        ),
        pytest.param(
            [_EXPRESSIONS],
            [
                _endpoint("fp8-0", "fp8"),
                {**_endpoint("odd", "fp8"), "metadata": {"name": "odd", "namespace": "ml", "labels": ["fp8"]}},
            ],
            {"endpoints": _WHOLE_NAMESPACE},
            {"fp8-0": 1},
            ["required resource ModelEndpoint ml/odd is malformed"],
            id="labels-unreadable-in-place-are-read-whole-and-named",
        ),
        pytest.param(
            [{"matchLabels": {"modelplane.ai/deployment": "fp8"}}, {"matchLabels": {"tier": "gold"}}],
            [
                {
                    **_endpoint("fp8-0", "fp8"),
                    "metadata": {
                        **_endpoint("fp8-0", "fp8")["metadata"],
                        "labels": {"modelplane.ai/deployment": "fp8", "tier": "gold"},
                    },
                },
                _endpoint("bf16-0", "bf16"),
            ],
            {
                "endpoints-0": {**_WHOLE_NAMESPACE, "matchLabels": {"labels": {"modelplane.ai/deployment": "fp8"}}},
                "endpoints-1": {**_WHOLE_NAMESPACE, "matchLabels": {"labels": {"tier": "gold"}}},
            },
            {"fp8-0": 1},  # both entries' weight, one backend; each entry lists it once
            [],
            id="an-endpoint-two-entries-match-is-read-once",
        ),
    ],
)
def test_service_reads_only_the_endpoints_its_selectors_match(
    selectors: list[dict[str, Any]],
    endpoints: list[dict[str, Any]],
    asked: dict[str, Any],
    routed: dict[str, int],
    warned: list[str],
) -> None:
    xr = _service_xr()
    xr["spec"]["endpoints"] = [{"selector": s, "weight": 1} for s in selectors]
    got = _serve(ServiceRunner(), xr, [GATEWAY, *endpoints])
    requirements = got["requirements"]["resources"]
    assert {k: v for k, v in requirements.items() if k != "gateway"} == asked
    assert _refs(got) == routed
    warnings = [r["message"] for r in got.get("results", []) if r["severity"] == "SEVERITY_WARNING"]
    assert [w for w in warnings if "malformed" in w] == [
        next(w for w in warnings if w.startswith(expected)) for expected in warned
    ]
    assert [e["endpoints"] for e in got["desired"]["composite"]["resource"]["status"]["endpoints"]] == [
        sorted(routed)
    ] * len(selectors)
