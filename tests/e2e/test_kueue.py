"""Kueue's webhooks and configuration as the tier registers them, without an API server (under `make test`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.kueue import INTEGRATIONS, configuration, webhook_configurations


def _hook(name: str, group: str, resource: str, path: str) -> dict[str, Any]:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
        "failurePolicy": "Fail",
        "rules": [{"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": [resource]}],
        "sideEffects": "None",
    }


MANIFESTS = [
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mutating-webhook-configuration"},
        "webhooks": [
            _hook("mpod.kb.io", "", "pods", "/mutate--v1-pod"),
            _hook("mdeployment.kb.io", "apps", "deployments", "/mutate-apps-v1-deployment"),
            _hook("mworkload.kb.io", "kueue.x-k8s.io", "workloads", "/mutate-kueue-x-k8s-io-v1beta2-workload"),
            _hook("mrayjob.kb.io", "ray.io", "rayjobs", "/mutate-ray-io-v1-rayjob"),
        ],
    }
]


def _by_name(port: int = 9999) -> dict[str, dict[str, Any]]:
    (config,) = webhook_configurations(MANIFESTS, port=port, ca_pem=b"CA", namespaces=["b-ns", "a-ns"])
    assert config["kind"] == "MutatingWebhookConfiguration"
    return {h["name"]: h for h in config["webhooks"]}


def test_only_webhooks_of_kinds_modelplane_composes_and_kueues_own() -> None:
    assert sorted(_by_name()) == ["mdeployment.kb.io", "mpod.kb.io", "mworkload.kb.io"]


@pytest.mark.parametrize(
    ("name", "path"),
    [
        pytest.param("mpod.kb.io", "/mutate--v1-pod", id="pod"),
        pytest.param("mworkload.kb.io", "/mutate-kueue-x-k8s-io-v1beta2-workload", id="workload"),
    ],
)
def test_each_webhook_is_served_on_loopback_with_the_tier_ca(name: str, path: str) -> None:
    hook = _by_name(port=4321)[name]
    assert hook["clientConfig"] == {"url": f"https://127.0.0.1:4321{path}", "caBundle": "Q0E="}


@pytest.mark.parametrize(
    ("name", "limited"),
    [
        pytest.param("mpod.kb.io", True, id="pods-only-in-managed-namespaces"),
        pytest.param("mdeployment.kb.io", True, id="deployments-only-in-managed-namespaces"),
        pytest.param("mworkload.kb.io", False, id="kueue-objects-everywhere"),
    ],
)
def test_pod_based_webhooks_see_only_the_managed_namespaces(name: str, *, limited: bool) -> None:
    selector = _by_name()[name].get("namespaceSelector")
    want = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a-ns", "b-ns"]}]}
    assert (selector == want) is limited, selector


def test_configuration_is_loopback_only_with_modelplanes_integrations() -> None:
    config = configuration(webhook_port=1, health_port=2, cert_dir=Path("/certs"), namespaces=["ns"])
    assert config["webhook"] == {"host": "127.0.0.1", "port": 1, "certDir": "/certs"}
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:2"
    assert config["metrics"]["bindAddress"] == "0"
    assert config["internalCertManagement"] == {"enable": False}
    assert config["integrations"]["frameworks"] == list(INTEGRATIONS)
    assert {"pod", "deployment", "leaderworkerset.x-k8s.io/leaderworkerset"} <= set(INTEGRATIONS)
