from __future__ import annotations

from typing import Any

import pytest

from modelplane.remote import Readiness, ReadinessRule, observed_manifest, readiness_for, wrap

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"}}


def test_wrap_targets_the_cluster_through_its_provider_config() -> None:
    assert wrap(DEPLOYMENT, name="r-0-deployment", namespace="ml", provider_config="east") == {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": "r-0-deployment", "namespace": "ml"},
        "spec": {
            "forProvider": {"manifest": DEPLOYMENT},
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "east"},
            "readiness": readiness_for("Deployment").spec(),
            "watch": True,
        },
    }


@pytest.mark.parametrize(
    ("manifest", "observe_only", "watched"),
    [
        pytest.param(DEPLOYMENT, False, True, id="workload-readiness-follows-it"),
        pytest.param({"kind": "LLMInferenceService"}, False, True, id="llmisvc"),
        pytest.param({"kind": "Unknown"}, False, True, id="derived-from-object"),
        pytest.param({"kind": "Namespace"}, False, False, id="ready-once-created"),
        pytest.param({"kind": "ConfigMap"}, False, False, id="configuration"),
        pytest.param({"kind": "ClusterQueue"}, True, True, id="observe-only-status"),
    ],
)
def test_watched_when_its_report_is_waited_for(manifest: dict[str, Any], observe_only: bool, watched: bool) -> None:
    obj = wrap(manifest, name="x", namespace="ml", provider_config="c", observe_only=observe_only)
    assert obj["spec"].get("watch", False) is watched


def test_observe_only() -> None:
    obj = wrap({"kind": "Queue"}, name="q", namespace="", provider_config="c", observe_only=True)
    assert obj["spec"]["managementPolicies"] == ["Observe"]
    assert obj["spec"]["readiness"] == {"policy": "DeriveFromObject"}


@pytest.mark.parametrize(
    ("kind", "policy"),
    [
        pytest.param("Namespace", Readiness.SUCCESSFUL_CREATE, id="namespace"),
        pytest.param("Deployment", Readiness.DERIVE_FROM_CEL_QUERY, id="deployment"),
        pytest.param("LLMInferenceService", Readiness.DERIVE_FROM_CEL_QUERY, id="llmisvc"),
        pytest.param("Unknown", Readiness.DERIVE_FROM_OBJECT, id="unknown-kind"),
    ],
)
def test_readiness_by_kind(kind: str, policy: Readiness) -> None:
    rule = readiness_for(kind)
    assert rule.policy is policy
    assert bool(rule.cel_query) == (policy is Readiness.DERIVE_FROM_CEL_QUERY)


def test_explicit_readiness_wins() -> None:
    rule = ReadinessRule(Readiness.ALL_TRUE)
    assert wrap(DEPLOYMENT, name="x", namespace="ml", provider_config="c", readiness=rule)["spec"]["readiness"] == {
        "policy": "AllTrue"
    }


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param({"status": {"atProvider": {"manifest": DEPLOYMENT}}}, DEPLOYMENT, id="observed"),
        pytest.param({"status": {}}, None, id="not-yet"),
        pytest.param({}, None, id="no-status"),
    ],
)
def test_observed_manifest(obj: dict[str, Any], want: dict[str, Any] | None) -> None:
    assert observed_manifest(obj) == want
