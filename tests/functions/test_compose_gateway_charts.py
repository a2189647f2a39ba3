"""compose-inference-gateway: the control plane's charts take spec.components and spec.registry as a stack does.

Envoy Gateway (``components.gateway``) and Envoy AI Gateway (``components.aiGateway``) are rows of the
same chart table as a workload cluster's: the default version and repository unless overridden, values
merged over ours, and ``spec.registry``'s chart and image mirrors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from compose_inference_gateway.fn import FunctionRunner
from modelplane.charts import CHARTS, Component
from tests.functions.test_compose_gateway_auth import API, INSTALLED, READY, _assert_valid, _composed, _run

ENVOY = CHARTS[Component.ENVOY_GATEWAY]
AI_CRDS, AI = CHARTS[Component.AI_GATEWAY_CRDS], CHARTS[Component.AI_GATEWAY]
MIRROR = "oci://mirror.example.com/charts"
OBSERVED = {
    **INSTALLED,
    "ai-gateway-crds": {"status": {"conditions": READY}},
    "ai-gateway": {"status": {"conditions": READY}},
}


def _gateway(extra: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"http": {"port": 80}, "auth": {"mode": "None"}, "aiGateway": "Enabled", **extra}
    return {"apiVersion": API, "kind": "InferenceGateway", "metadata": {"name": "default"}, "spec": spec}


def _chart(name: str, repository: str, version: str, secret: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "repository": repository, "version": version}
    if secret:
        out["pullSecretRef"] = {"name": secret}
    return out


@dataclass(frozen=True)
class Case:
    """A spec.components / spec.registry and the charts (and some values) each Release gets."""

    id: str
    spec: dict[str, Any]
    charts: dict[str, dict[str, Any]]
    # Per Release key, (path of keys, value) pairs its values must hold.
    values: dict[str, list[tuple[tuple[str, ...], Any]]] = field(default_factory=dict)
    # Per Release key, paths its values must not hold.
    absent: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)


DEFAULTS = {
    "envoy-gateway": _chart(ENVOY.name, ENVOY.repository, ENVOY.version),
    "ai-gateway-crds": _chart(AI_CRDS.name, AI_CRDS.repository, AI_CRDS.version),
    "ai-gateway": _chart(AI.name, AI.repository, AI.version),
}
CASES = [
    # No overrides: the table's rows, as before (one Envoy Gateway version across the fleet).
    Case("defaults", {}, DEFAULTS, absent={"envoy-gateway": [("global", "imageRegistry")]}),
    Case(
        "gateway-version-repository-values",
        {
            "components": {
                "gateway": {
                    "version": "v1.9.1",
                    "repository": "oci://charts.example.com/envoy",
                    "values": {
                        "deployment": {"replicas": 2},
                        "config": {"envoyGateway": {"logging": {"level": "debug"}}},
                    },
                }
            }
        },
        {**DEFAULTS, "envoy-gateway": _chart(ENVOY.name, "oci://charts.example.com/envoy", "v1.9.1")},
        values={
            "envoy-gateway": [
                (("deployment", "replicas"), 2),
                # Merged key by key: ours (the Backend API, the AI gateway's extension) stay.
                (("config", "envoyGateway", "logging", "level"), "debug"),
                (("config", "envoyGateway", "extensionApis", "enableBackend"), True),
                (("config", "envoyGateway", "extensionManager", "service", "fqdn", "port"), 1063),
            ]
        },
    ),
    Case(
        "ai-gateway-version-to-both-values-to-the-controller",
        {"components": {"aiGateway": {"version": "v1.1.1", "values": {"controller": {"replicaCount": 2}}}}},
        {
            **DEFAULTS,
            "ai-gateway-crds": _chart(AI_CRDS.name, AI_CRDS.repository, "v1.1.1"),
            "ai-gateway": _chart(AI.name, AI.repository, "v1.1.1"),
        },
        values={"ai-gateway": [(("controller", "replicaCount"), 2)]},
        absent={"ai-gateway-crds": [("controller",)]},
    ),
    Case(
        "registry-mirrors-charts-and-images",
        {"registry": {"charts": MIRROR, "images": "mirror.example.com/hub", "pullSecretRef": {"name": "mirror"}}},
        {key: {**chart, "repository": MIRROR, "pullSecretRef": {"name": "mirror"}} for key, chart in DEFAULTS.items()},
        values={
            "envoy-gateway": [(("global", "imageRegistry"), "mirror.example.com/hub")],
            "ai-gateway": [
                (("controller", "image", "repository"), "mirror.example.com/hub/envoyproxy/ai-gateway-controller"),
                (("extProc", "image", "repository"), "mirror.example.com/hub/envoyproxy/ai-gateway-extproc"),
            ],
        },
    ),
    Case(
        "component-repository-wins-over-the-mirror",
        {
            "registry": {"charts": MIRROR, "pullSecretRef": {"name": "mirror"}},
            "components": {"gateway": {"repository": "https://charts.example.com"}},
        },
        {
            "envoy-gateway": _chart(ENVOY.name, "https://charts.example.com", ENVOY.version),
            "ai-gateway-crds": _chart(AI_CRDS.name, MIRROR, AI_CRDS.version, "mirror"),
            "ai-gateway": _chart(AI.name, MIRROR, AI.version, "mirror"),
        },
    ),
    Case(
        "values-win-over-the-image-mirror",
        {
            "registry": {"images": "mirror.example.com"},
            "components": {"gateway": {"values": {"global": {"imageRegistry": "other.example.com"}}}},
        },
        DEFAULTS,
        values={"envoy-gateway": [(("global", "imageRegistry"), "other.example.com")]},
    ),
]


def _at(values: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = values
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return KeyError
        node = node[key]
    return node


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_gateway_charts_take_components_and_registry(case: Case) -> None:
    got = _run(FunctionRunner(), _gateway(case.spec), observed=OBSERVED)
    composed = _composed(got)
    charts = {key: composed[key]["spec"]["forProvider"]["chart"] for key in case.charts}
    assert charts == case.charts
    for key, pairs in case.values.items():
        values = composed[key]["spec"]["forProvider"]["values"]
        for path, want in pairs:
            assert _at(values, path) == want, (key, path, values)
    for key, paths in case.absent.items():
        values = composed[key]["spec"]["forProvider"]["values"]
        for path in paths:
            assert _at(values, path) is KeyError, (key, path, values)
    _assert_valid(got)


def test_ai_gateway_overrides_install_nothing_while_it_is_disabled() -> None:
    spec = {"aiGateway": "Disabled", "components": {"aiGateway": {"version": "v1.1.1"}}}
    composed = _composed(_run(FunctionRunner(), _gateway(spec), observed=OBSERVED))
    assert "ai-gateway" not in composed
    assert "ai-gateway-crds" not in composed
    assert composed["envoy-gateway"]["spec"]["forProvider"]["chart"] == DEFAULTS["envoy-gateway"]
