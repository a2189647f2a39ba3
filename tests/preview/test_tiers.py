"""The Services table's backends of a tiered service: each backend's tier, and how traffic reaches it.

The service is composed by compose-model-service in-process, so the view reads exactly what the
function composes (its HTTPRoute or AIGatewayRoute, fallback Backend copies, AIServiceBackends) and
the status it writes; the lines are those the Services table prints.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_service.fn import FunctionRunner as ServiceRunner
from modelplane.preview.tables import backend_line
from modelplane.preview.view.backends import route_of
from modelplane.preview.view.model import BackendView
from modelplane.render.store import Store

API = "modelplane.ai/v1alpha1"
GATEWAY = {
    "apiVersion": API,
    "kind": "InferenceGateway",
    "metadata": {"name": "default"},
    "status": {"address": "http://203.0.113.10"},
}
# Token limits and more than two tiers are routed by Envoy AI Gateway (a token limit needs Redis too).
AI_GATEWAY = {**GATEWAY, "spec": {"aiGateway": "Enabled", "rateLimit": {"redis": {"address": "redis:6379"}}}}
HOSTED = "https://api.openai.com/v1"
_RESOURCE_NAME = "crossplane.io/composition-resource-name"


def _service(*entries: tuple[str, int | None], limits: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A ModelService whose entries select by ``app`` label, each with its tier (None: unset)."""
    spec: dict[str, Any] = {
        "endpoints": [
            {"selector": {"matchLabels": {"app": app}}, "weight": 1, **({} if tier is None else {"tier": tier})}
            for app, tier in entries
        ]
    }
    if limits:
        spec["limits"] = limits
    return {"apiVersion": API, "kind": "ModelService", "metadata": {"name": "llm", "namespace": "ml"}, "spec": spec}


def _endpoint(name: str, app: str, *, url: str = "http://10.0.0.1:8000", ready: bool = True) -> dict[str, Any]:
    """A hand-made ModelEndpoint with its Backend (named as the endpoint, as compose-model-endpoint names it)."""
    return {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": "ml", "labels": {"app": app}},
        "spec": {"url": url},
        "status": {"backendName": name, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def _run(xr: dict[str, Any], required: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    req = fnv1.RunFunctionRequest(observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))))
    for name, items in (required or {}).items():
        req.required_resources[name].SetInParent()
        for item in items:
            req.required_resources[name].items.add().resource.update(item)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(ServiceRunner().RunFunction(req, None)))
    return got


def _shown(xr: dict[str, Any], objects: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """Compose ``xr`` against ``objects``; the path and the backend lines the preview shows for what it composed."""
    # As Crossplane does: once, then again with the requirements answered from ``objects``.
    store, required = Store(objects), {}
    for name, selector in _run(xr).get("requirements", {}).get("resources", {}).items():
        found = store.fetch(json_format.ParseDict(selector, fnv1.ResourceSelector()))
        required[name] = [resource.struct_to_dict(item.resource) for item in found.items]
    got = _run(xr, required)
    # Crossplane records each composed resource's key in this annotation; the preview reads it.
    composed = [
        {**r["resource"], "metadata": {**r["resource"]["metadata"], "annotations": {_RESOURCE_NAME: key}}}
        for key, r in got["desired"].get("resources", {}).items()
    ]
    status = got["desired"]["composite"]["resource"].get("status", {})
    route = route_of({**xr, "status": status}, composed)
    return route.path, [backend_line(b) for b in route.backends]


@dataclass(frozen=True)
class Case:
    """A service, its endpoints and gateway, and the backend lines the user reads."""

    id: str
    xr: dict[str, Any]
    objects: list[dict[str, Any]]
    lines: list[str]
    path: str = "/ml/llm"


CASES = [
    Case(
        "single-tier-prints-as-before",
        _service(("primary", None)),
        [GATEWAY, _endpoint("p-0", "primary"), _endpoint("p-1", "primary", ready=False)],
        ["p-0: 1 → 100.0%", "p-1: 0 → 0.0%"],
    ),
    Case(
        "two-tiers-with-a-fallback-copy-fail-over-per-request",
        _service(("primary", 0), ("backup", 1)),
        [GATEWAY, _endpoint("p-0", "primary"), _endpoint("p-1", "primary"), _endpoint("b-0", "backup")],
        ["p-0: 1 → 50.0% (tier 0)", "p-1: 1 → 50.0% (tier 0)", "b-0: 1 → 100.0% (tier 1, fallback)"],
    ),
    Case(
        "two-tiers-the-control-plane-holds-the-hosted-fallback-at-weight-0",
        _service(("primary", 0), ("hosted", 1)),
        [GATEWAY, _endpoint("p-0", "primary"), _endpoint("openai", "hosted", url=HOSTED)],
        ["p-0: 1 → 100.0% (tier 0)", "openai: 0 → 0.0% (tier 1)"],
    ),
    Case(
        "two-tiers-the-control-plane-moved-traffic-to-the-fallback-tier",
        _service(("primary", 0), ("hosted", 1)),
        [GATEWAY, _endpoint("p-0", "primary", ready=False), _endpoint("openai", "hosted", url=HOSTED)],
        ["p-0: 0 → 0.0% (tier 0)", "openai: 1 → 100.0% (tier 1)"],
    ),
    Case(
        "three-tiers-are-priorities-on-an-ai-gateway-route",
        _service(("primary", 0), ("backup", 1), ("hosted", 2)),
        [
            AI_GATEWAY,
            _endpoint("p-0", "primary"),
            _endpoint("p-1", "primary"),
            _endpoint("b-0", "backup"),
            _endpoint("h-0", "hosted", url=HOSTED),
        ],
        [
            "p-0: 1 → 50.0% (tier 0, priority 0)",
            "p-1: 1 → 50.0% (tier 0, priority 0)",
            "b-0: 1 → 100.0% (tier 1, priority 1)",
            "h-0: 1 → 100.0% (tier 2, priority 2)",
        ],
        path="",
    ),
    Case(
        "three-tiers-the-primary-down-on-an-ai-gateway-route",
        _service(("primary", 0), ("backup", 1), ("hosted", 2)),
        [
            AI_GATEWAY,
            _endpoint("p-0", "primary", ready=False),
            _endpoint("b-0", "backup"),
            _endpoint("h-0", "hosted", url=HOSTED),
        ],
        [
            "p-0: 0 → 0.0% (tier 0, priority 0)",
            "b-0: 1 → 100.0% (tier 1, priority 1)",
            "h-0: 1 → 100.0% (tier 2, priority 2)",
        ],
        path="",
    ),
    Case(
        "one-tier-token-limited-on-an-ai-gateway-route-is-not-empty",
        _service(("primary", None), limits=[{"tokensPerMinute": 1000}]),
        [AI_GATEWAY, _endpoint("p-0", "primary"), _endpoint("p-1", "primary")],
        ["p-0: 1 → 50.0%", "p-1: 1 → 50.0%"],
        path="",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_backend_lines(case: Case) -> None:
    path, lines = _shown(case.xr, case.objects)
    assert lines == case.lines
    assert path == case.path


@pytest.mark.parametrize(
    ("service", "composed"),
    [
        pytest.param({}, [], id="nothing"),
        pytest.param({"spec": "junk", "status": []}, [{"kind": "HTTPRoute", "spec": {"rules": "junk"}}], id="junk"),
        pytest.param(
            {"spec": {"endpoints": [{"tier": "x"}, {"tier": 1}]}, "status": {"endpoints": [{"index": 9}, "x"]}},
            [
                {"kind": "HTTPRoute", "metadata": None, "spec": {"rules": [{"backendRefs": [{"weight": "x"}, 5]}]}},
                {"kind": "AIServiceBackend", "spec": {"backendRef": None}},
            ],
            id="malformed-fields",
        ),
        pytest.param(
            {},
            [{"kind": "AIGatewayRoute", "spec": {"rules": [{"backendRefs": [{"name": "x", "priority": True}]}]}}],
            id="ai-route-junk-priority",
        ),
    ],
)
def test_malformed_routes_read_without_raising(service: dict[str, Any], composed: list[dict[str, Any]]) -> None:
    route = route_of(service, composed)
    assert all(isinstance(b, BackendView) for b in route.backends)
