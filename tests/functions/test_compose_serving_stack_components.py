"""compose-serving-stack: each component Managed (with overrides), Existing (checked) or Disabled; the registry.

What a platform engineer checks: which Releases exist and what they pull, which Observe-only
Objects check an Existing component, what ``status.components`` and ComponentsReady say when
it is there, half there or not there, and that a component handed over is never uninstalled.
Every composed object validates against its schema.
"""

from __future__ import annotations

from typing import Any

import pytest
import xrds
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.charts import Component
from tests.functions.test_compose_serving_stack import READY, TLS_KEYS, _desired, _gateway, _req, _run

CERT_API = "component-certManager-api-v1-cert-manager-io"
CERT_CONTROLLER = "component-certManager-controller"
KUEUE_API = "component-scheduler-api-v1beta2-kueue-x-k8s-io"
KUEUE_CONTROLLER = "component-scheduler-controller"
AI_CRDS = "envoy-ai-gateway-crd"
# cert-manager's CRDs are not among the shared ones: its objects are held to stand-ins in tests/conformance.
_NO_SHARED_SCHEMA = ("cert-manager.io/",)
NOT_FOUND = {"status": {"conditions": [{"type": "Synced", "status": "False", "reason": "ReconcileError"}]}}


def _stack(
    components: dict[str, Any] | None = None,
    *,
    registry: dict[str, Any] | None = None,
    backend: str = "KServe",
    scheduler: str = "Kueue",
    insecure: bool | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "providerConfigRef": {"name": "c", "kind": "ClusterProviderConfig"},
        "backend": backend,
        "scheduler": {"type": scheduler},
        "gateway": {"gatewayClassName": "modelplane", "port": 80},
    }
    if insecure is not None:
        spec["gateway"]["insecure"] = insecure
    if components is not None:
        spec["components"] = components
    if registry is not None:
        spec["registry"] = registry
    return {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ServingStack", "metadata": {"name": "c"}, "spec": spec}


def _found(kind: str = "APIService", *, available: bool = True) -> dict[str, Any]:
    """An Observe-only Object that observed its remote object."""
    manifest: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}}
    if kind == "Deployment":
        manifest["status"] = {"conditions": [{"type": "Available", "status": "True" if available else "False"}]}
    return {"status": {**READY["status"], "atProvider": {"manifest": manifest}}}


def _releases(*charts: Component) -> dict[str, dict[str, Any]]:
    return {f"release-{c}": READY for c in charts}


def _ready_stack(*, but: tuple[Component, ...] = ()) -> dict[str, dict[str, Any]]:
    """A KServe + Kueue stack with every release, the Gateway and its TLS chain Ready, but ``but``."""
    charts = [
        c
        for c in (
            Component.CERT_MANAGER,
            Component.ENVOY_GATEWAY,
            Component.LWS,
            Component.DRA_DRIVER,
            Component.KSERVE_CRDS,
            Component.KSERVE,
            Component.KUEUE,
            Component.AI_GATEWAY_CRDS,
            Component.AI_GATEWAY,
        )
        if c not in but
    ]
    return {
        **_releases(*charts),
        "gateway-namespace": READY,
        "gateway-class": READY,
        "gateway": _gateway(),
        **dict.fromkeys(TLS_KEYS, READY),
    }


def _status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    got: dict[str, Any] = resource.struct_to_dict(rsp.desired.composite.resource).get("status", {})
    return got


def _component(rsp: fnv1.RunFunctionResponse, name: str) -> dict[str, Any]:
    return next(c for c in _status(rsp)["components"] if c["name"] == name)


def _condition(rsp: fnv1.RunFunctionResponse, kind: str) -> tuple[str, str, str]:
    found = next(c for c in rsp.conditions if c.type == kind)
    return fnv1.Status.Name(found.status).removeprefix("STATUS_CONDITION_"), found.reason, found.message


def _assert_valid(desired: dict[str, dict[str, Any]]) -> None:
    for key, obj in desired.items():
        result = xrds.validate(obj)
        assert result.ok, f"{key}: {result.errors}"
        manifest = (obj.get("spec", {}).get("forProvider") or {}).get("manifest")
        if manifest is not None and not str(manifest.get("apiVersion")).startswith(_NO_SHARED_SCHEMA):
            inner = xrds.validate(manifest)
            assert inner.ok, f"{key}.manifest: {inner.errors}"


# --- Each mode ---


@pytest.mark.parametrize(
    ("components", "releases", "probes"),
    [
        pytest.param(
            None,
            {"cert-manager", "envoy-gateway", "lws", "nvidia-dra-driver", "kserve-llmisvc-crd", "kueue", AI_CRDS},
            set(),
            id="all-managed-first-pass",
        ),
        pytest.param(
            {"certManager": {"mode": "Existing"}, "scheduler": {"mode": "Existing"}},
            {"envoy-gateway", "lws", "nvidia-dra-driver", "kserve-llmisvc-crd", AI_CRDS},
            {CERT_API, CERT_CONTROLLER, KUEUE_API, KUEUE_CONTROLLER},
            id="existing-cert-manager-and-kueue",
        ),
        pytest.param(
            {"draDriver": {"mode": "Disabled"}, "scheduler": {"mode": "Disabled"}},
            {"cert-manager", "envoy-gateway", "lws", "kserve-llmisvc-crd", AI_CRDS},
            set(),
            id="disabled-dra-and-scheduler",
        ),
        pytest.param(
            {"draDriver": {"mode": "Existing"}},
            {"cert-manager", "envoy-gateway", "lws", "kserve-llmisvc-crd", "kueue", AI_CRDS},
            {"component-draDriver-deviceclass-gpu-nvidia-com"},
            id="existing-dra-driver-is-its-device-class",
        ),
    ],
)
def test_managed_installs_existing_checks_disabled_leaves_out(
    components: dict[str, Any] | None, releases: set[str], probes: set[str]
) -> None:
    desired = _desired(_run(_req(_stack(components))))
    assert {k.removeprefix("release-") for k in desired if k.startswith("release-")} == releases
    assert {k for k in desired if k.startswith("component-")} == probes
    for key in probes:
        spec = desired[key]["spec"]
        assert spec["managementPolicies"] == ["Observe"]  # never created, changed or deleted
        assert spec["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": "c"}
    _assert_valid(desired)


def test_existing_probes_name_the_api_version_and_the_controller() -> None:
    desired = _desired(_run(_req(_stack({"certManager": {"mode": "Existing"}}))))
    manifests = {k: desired[k]["spec"]["forProvider"]["manifest"] for k in (CERT_API, CERT_CONTROLLER)}
    assert manifests == {
        CERT_API: {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": "v1.cert-manager.io"},
        },
        CERT_CONTROLLER: {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "cert-manager", "namespace": "cert-manager"},
        },
    }


def test_existing_checks_the_controller_the_user_names() -> None:
    xr = _stack({"certManager": {"mode": "Existing", "controller": {"namespace": "security", "name": "cm"}}})
    desired = _desired(_run(_req(xr)))
    assert desired[CERT_CONTROLLER]["spec"]["forProvider"]["manifest"]["metadata"] == {
        "name": "cm",
        "namespace": "security",
    }


# --- Overrides and the registry ---


def test_overrides_reach_the_release() -> None:
    components = {
        "lws": {"version": "0.11.0", "repository": "oci://charts.example.com/lws", "values": {"replicaCount": 2}}
    }
    release = _desired(_run(_req(_stack(components))))["release-lws"]
    assert release["spec"]["forProvider"] == {
        "chart": {"name": "lws", "repository": "oci://charts.example.com/lws", "version": "0.11.0"},
        "namespace": "lws-system",
        "values": {"replicaCount": 2},
        "wait": True,
    }
    _assert_valid({"release-lws": release})


def test_values_merge_over_ours() -> None:
    components = {"draDriver": {"values": {"resources": {"computeDomains": {"enabled": False}}, "logVerbosity": "4"}}}
    values = _desired(_run(_req(_stack(components))))["release-nvidia-dra-driver"]["spec"]["forProvider"]["values"]
    assert values == {
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "logVerbosity": "4",
    }


def test_the_registry_mirrors_charts_and_images_with_the_chart_secret() -> None:
    registry = {
        "charts": "oci://mirror.example.com/charts",
        "images": "mirror.example.com/hub",
        "pullSecretRef": {"name": "m"},
    }
    desired = _desired(_run(_req(_stack(registry=registry))))
    for key in ("release-cert-manager", "release-kueue", "release-lws"):
        chart = desired[key]["spec"]["forProvider"]["chart"]
        assert chart["repository"] == "oci://mirror.example.com/charts"
        assert chart["pullSecretRef"] == {"name": "m"}
    values = {k: desired[k]["spec"]["forProvider"]["values"] for k in ("release-cert-manager", "release-kueue")}
    assert values["release-cert-manager"]["webhook"] == {
        "image": {"repository": "mirror.example.com/hub/jetstack/cert-manager-webhook"}
    }
    assert values["release-cert-manager"]["crds"] == {"enabled": True}  # ours are kept
    assert values["release-kueue"] == {
        "controllerManager": {"manager": {"image": {"repository": "mirror.example.com/hub/kueue/kueue"}}}
    }
    _assert_valid(desired)


# --- Existing: there, half there, not there ---


def _existing_cert_manager(api: dict[str, Any] | None, controller: dict[str, Any] | None) -> fnv1.RunFunctionResponse:
    observed = _ready_stack(but=(Component.CERT_MANAGER,))
    if api is not None:
        observed[CERT_API] = api
    if controller is not None:
        observed[CERT_CONTROLLER] = controller
    return _run(_req(_stack({"certManager": {"mode": "Existing"}}), observed))


@pytest.mark.parametrize(
    ("api", "controller", "ready", "condition", "message"),
    [
        pytest.param(_found(), _found("Deployment"), True, ("TRUE", "ComponentsReady"), "", id="everything-there"),
        pytest.param(
            NOT_FOUND,
            _found("Deployment"),
            False,
            ("FALSE", "ComponentMissing"),
            "API cert-manager.io/v1 not found",
            id="api-missing",
        ),
        pytest.param(
            _found(),
            _found("Deployment", available=False),
            False,
            ("FALSE", "ComponentMissing"),
            "Deployment cert-manager/cert-manager not Available",
            id="controller-not-available",
        ),
        pytest.param(
            _found(),
            NOT_FOUND,
            False,
            ("FALSE", "ComponentMissing"),
            "Deployment cert-manager/cert-manager not found",
            id="controller-missing",
        ),
        pytest.param(
            None,
            None,
            False,
            ("FALSE", "CheckingComponents"),
            "API cert-manager.io/v1 not checked yet; Deployment cert-manager/cert-manager not checked yet",
            id="not-checked-yet",
        ),
    ],
)
def test_existing_reports_what_is_missing(
    api: dict[str, Any] | None,
    controller: dict[str, Any] | None,
    ready: bool,
    condition: tuple[str, str],
    message: str,
) -> None:
    rsp = _existing_cert_manager(api, controller)
    entry = _component(rsp, "certManager")
    assert (entry["mode"], entry["ready"], entry.get("message", ""), entry["neededBy"]) == (
        "Existing",
        ready,
        message,
        "All",
    )
    status, reason, said = _condition(rsp, "ComponentsReady")
    assert (status, reason) == condition
    if not ready:
        assert said == f"certManager (Existing): {message}"
    else:
        assert said == "found on the cluster: certManager"
    assert "release-cert-manager" not in _desired(rsp)  # never installed
    _assert_valid(_desired(rsp))


def test_a_managed_release_waits_for_its_existing_dependency() -> None:
    observed = {
        **_releases(Component.ENVOY_GATEWAY, Component.LWS, Component.KSERVE_CRDS, Component.DRA_DRIVER),
        CERT_API: NOT_FOUND,
        CERT_CONTROLLER: _found("Deployment"),
    }
    rsp = _run(_req(_stack({"certManager": {"mode": "Existing"}}), observed))
    assert "release-kserve-llmisvc" not in _desired(rsp)
    status, reason, message = _condition(rsp, "Installed")
    assert (status, reason) == ("FALSE", "WaitingForDependencies")
    assert "kserve-llmisvc waits for cert-manager (Existing)" in message
    observed[CERT_API] = _found()
    assert "release-kserve-llmisvc" in _desired(_run(_req(_stack({"certManager": {"mode": "Existing"}}), observed)))


def test_an_existing_scheduler_missing_leaves_the_stack_installed_but_reports_it() -> None:
    observed = {**_ready_stack(but=(Component.KUEUE,)), KUEUE_API: NOT_FOUND, KUEUE_CONTROLLER: NOT_FOUND}
    rsp = _run(_req(_stack({"scheduler": {"mode": "Existing"}}), observed))
    assert _condition(rsp, "Installed")[:2] == ("TRUE", "Installed")
    assert rsp.desired.composite.ready == fnv1.READY_TRUE
    assert _condition(rsp, "ComponentsReady") == (
        "FALSE",
        "ComponentMissing",
        "scheduler (Existing): API kueue.x-k8s.io/v1beta2 not found; Deployment kueue-system/kueue-controller-manager "
        "not found",
    )


# --- Disabled ---


def test_disabled_components_are_reported_not_ready_and_named_in_the_condition() -> None:
    rsp = _run(_req(_stack({"draDriver": {"mode": "Disabled"}}), _ready_stack(but=(Component.DRA_DRIVER,))))
    assert _component(rsp, "draDriver") == {
        "name": "draDriver",
        "mode": "Disabled",
        "ready": False,
        "neededBy": "All",
        "message": "Disabled: nothing is installed or checked",
    }
    assert _condition(rsp, "ComponentsReady")[:2] == ("TRUE", "ComponentsReady")
    assert "Disabled: draDriver" in _condition(rsp, "ComponentsReady")[2]
    assert _condition(rsp, "Installed")[:2] == ("TRUE", "Installed")


def test_a_disabled_gateway_composes_no_gateway() -> None:
    observed = {k: v for k, v in _ready_stack(but=(Component.ENVOY_GATEWAY,)).items() if k.startswith("release-")}
    rsp = _run(_req(_stack({"gateway": {"mode": "Disabled"}}), observed))
    desired = _desired(rsp)
    assert not any(k.startswith("gateway") for k in desired)
    assert "release-envoy-gateway" not in desired
    assert _condition(rsp, "Installed") == (
        "TRUE",
        "Installed",
        "8 releases ready, no gateway (Envoy Gateway is Disabled)",
    )


def test_a_disabled_cert_manager_says_why_the_gateway_has_no_tls() -> None:
    observed = {k: v for k, v in _ready_stack(but=(Component.CERT_MANAGER,)).items() if k.startswith("release-")}
    rsp = _run(_req(_stack({"certManager": {"mode": "Disabled"}}, backend="Native"), observed))
    status, reason, message = _condition(rsp, "GatewayTLS")
    assert (status, reason) == ("FALSE", "TLSPending")
    assert "cert-manager, which is Disabled" in message
    assert not any(k in _desired(rsp) for k in TLS_KEYS)


# --- A component that stops being Managed is handed over, never uninstalled ---


@pytest.mark.parametrize("mode", ["Existing", "Disabled"])
def test_a_release_no_longer_managed_is_made_observe_only_then_left_out(mode: str) -> None:
    installed: dict[str, Any] = {
        "apiVersion": "helm.m.crossplane.io/v1beta1",
        "kind": "Release",
        "metadata": {"name": "c-kueue", "namespace": "crossplane-system"},
        "spec": {"forProvider": {"chart": {"name": "kueue", "version": "0.19.2"}, "namespace": "kueue-system"}},
        **READY,
    }
    xr = _stack({"scheduler": {"mode": mode}})
    rsp = _run(_req(xr, {**_ready_stack(), "release-kueue": installed}))
    kept = _desired(rsp)["release-kueue"]
    assert kept["spec"]["managementPolicies"] == ["Observe"]  # deleting it now would uninstall Kueue
    assert kept["spec"]["forProvider"] == installed["spec"]["forProvider"]
    assert "status" not in kept
    handed = {**installed, "spec": {**installed["spec"], "managementPolicies": ["Observe"]}}
    rsp = _run(_req(xr, {**_ready_stack(), "release-kueue": handed}))
    assert "release-kueue" not in _desired(rsp)  # Crossplane deletes the Release, Helm's release stays
    assert not any("kept" in r.message for r in rsp.results)  # no "nothing accounted for it" warning


# --- Bad input ---


@pytest.mark.parametrize(
    "components",
    [
        pytest.param({"certManager": {"mode": "Adopted"}}, id="unknown-mode"),
        pytest.param({"lws": {"values": ["a"]}}, id="values-not-an-object"),
        pytest.param({"gateway": {"version": ""}}, id="empty-version"),
        pytest.param({"kserve": {"controller": {"name": "x"}}}, id="controller-without-namespace"),
    ],
)
def test_bad_components_keep_everything_and_say_which_field(components: dict[str, Any]) -> None:
    observed = _ready_stack()
    rsp = _run(_req(_stack(components), observed))
    assert set(_desired(rsp)) == set(observed)  # nothing dropped
    status, reason, message = _condition(rsp, "Installed")
    assert (status, reason) == ("FALSE", "InvalidSpec")
    assert f"spec.components.{next(iter(components))}" in message
