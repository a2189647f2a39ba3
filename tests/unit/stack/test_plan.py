"""A stack's plan: each component's mode, what a Managed one installs, what an Existing one is checked with."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.backends import kserve, native
from modelplane.charts import CHARTS, Component, stack_components
from modelplane.monitoring import MONITORING_API_VERSION
from modelplane.routing.aigateway import AI_GATEWAY_API_VERSION
from modelplane.routing.backend import BACKEND_API_VERSION
from modelplane.routing.gateway import GATEWAY_API_VERSION
from modelplane.routing.workload_tls import CERT_MANAGER_API_VERSION
from modelplane.schedulers import SCHEDULERS, kai, kueue
from modelplane.stack.components import Mode, NeededBy, StackComponent, probes
from modelplane.stack.overrides import Overrides, Registry
from modelplane.stack.plan import Settings, StackPlan, plan_stack
from modelplane.stack.presence import Finding, Seen, finding, presence
from modelplane.stack.report import component_states, components_condition

ALL = set(StackComponent)


def _plan(**settings: Settings) -> StackPlan:
    return plan_stack(
        backend="KServe",
        scheduler="Kueue",
        prometheus="Managed",
        settings={StackComponent(k): v for k, v in settings.items()},
    )


@pytest.mark.parametrize(
    ("backend", "scheduler", "prometheus", "modes"),
    [
        pytest.param("KServe", "Kueue", "Managed", dict.fromkeys(ALL, Mode.MANAGED), id="kserve-kueue-everything"),
        pytest.param(
            "Native",
            "None",
            "None",
            {
                **dict.fromkeys(ALL - {StackComponent.KSERVE, StackComponent.SCHEDULER}, Mode.MANAGED),
                StackComponent.PROMETHEUS: Mode.DISABLED,
            },
            id="native-no-scheduler",
        ),
        pytest.param(
            "Native",
            "KAI",
            "Installed",
            {**dict.fromkeys(ALL - {StackComponent.KSERVE}, Mode.MANAGED), StackComponent.PROMETHEUS: Mode.EXISTING},
            id="installed-prometheus-is-existing",
        ),
    ],
)
def test_the_stack_has_the_components_its_cluster_uses(
    backend: str, scheduler: str, prometheus: str, modes: dict[StackComponent, Mode]
) -> None:
    plan = plan_stack(backend=backend, scheduler=scheduler, prometheus=prometheus)
    assert {p.component: p.mode for p in plan.parts} == modes
    # With every component Managed, the plan installs what the chart table always did.
    want = {c.component for c in stack_components(backend=backend, scheduler=scheduler, prometheus=prometheus)}
    assert {i.chart.component for i in plan.installs} == want


def test_releases_install_dependencies_first() -> None:
    plan = _plan()
    order = [i.chart.component for i in plan.installs]
    for position, chart in enumerate(order):
        assert set(CHARTS[chart].depends_on) <= set(order[:position]), chart


@pytest.mark.parametrize(
    ("component", "mode", "installs", "probe_kinds"),
    [
        pytest.param("certManager", Mode.EXISTING, set(), ["APIService", "Deployment"], id="cert-manager-existing"),
        pytest.param("certManager", Mode.DISABLED, set(), [], id="cert-manager-disabled"),
        pytest.param("kserve", Mode.EXISTING, set(), ["APIService", "Deployment"], id="kserve-existing"),
        pytest.param("scheduler", Mode.EXISTING, set(), ["APIService", "Deployment"], id="kueue-existing"),
        pytest.param("draDriver", Mode.EXISTING, set(), ["DeviceClass"], id="dra-existing"),
        pytest.param(
            "aiGateway", Mode.MANAGED, {Component.AI_GATEWAY_CRDS, Component.AI_GATEWAY}, [], id="ai-gateway-managed"
        ),
    ],
)
def test_a_component_is_installed_checked_or_left_out(
    component: str, mode: Mode, installs: set[Component], probe_kinds: list[str]
) -> None:
    part = _plan(**{component: Settings(mode)}).part(StackComponent(component))
    assert part is not None
    assert part.mode is mode
    assert {i.chart.component for i in part.installs} == installs
    assert [p.kind for p in part.probes] == probe_kinds


def test_existing_checks_the_controller_the_user_names() -> None:
    part = _plan(certManager=Settings(Mode.EXISTING, controller=("security", "cm"))).part(StackComponent.CERT_MANAGER)
    assert part is not None
    assert [str(p) for p in part.probes] == ["API cert-manager.io/v1", "Deployment security/cm"]


def test_overrides_reach_the_main_chart_and_the_version_both() -> None:
    plan = _plan(kserve=Settings(overrides=Overrides(version="v0.21.0", values={"a": 1})))
    installs = {i.chart.component: i for i in plan.installs}
    assert installs[Component.KSERVE].version == installs[Component.KSERVE_CRDS].version == "v0.21.0"
    assert installs[Component.KSERVE].values == {"a": 1}
    assert installs[Component.KSERVE_CRDS].values == {}


def test_the_registry_reaches_every_managed_chart() -> None:
    plan = plan_stack(
        backend="KServe", scheduler="KAI", registry=Registry("oci://m.example.com/c", "m.example.com", "s")
    )
    assert {(i.repository, i.pull_secret) for i in plan.installs} == {("oci://m.example.com/c", "s")}
    kai_install = next(i for i in plan.installs if i.chart.component is Component.KAI)
    assert kai_install.values == {"global": {"registry": "m.example.com/kai-scheduler/kai-scheduler"}}


@pytest.mark.parametrize(
    ("ai_gateway", "extension"),
    [
        pytest.param(Mode.MANAGED, True, id="managed"),
        pytest.param(Mode.EXISTING, True, id="existing"),
        pytest.param(Mode.DISABLED, False, id="disabled-drops-the-extension-server"),
    ],
)
def test_envoy_gateway_calls_envoy_ai_gateway_unless_it_is_disabled(ai_gateway: Mode, extension: bool) -> None:
    plan = _plan(aiGateway=Settings(ai_gateway))
    gateway = next(i for i in plan.installs if i.chart.component is Component.ENVOY_GATEWAY)
    assert ("config" in gateway.values) == extension


@pytest.mark.parametrize(
    ("component", "backend", "secure", "want"),
    [
        pytest.param(StackComponent.CERT_MANAGER, "KServe", False, NeededBy.ALL, id="cert-manager-kserve"),
        pytest.param(StackComponent.CERT_MANAGER, "Native", True, NeededBy.ALL, id="cert-manager-tls"),
        pytest.param(StackComponent.CERT_MANAGER, "Native", False, NeededBy.NONE, id="cert-manager-plain-native"),
        pytest.param(StackComponent.LWS, "KServe", True, NeededBy.ALL, id="lws-kserve"),
        pytest.param(StackComponent.LWS, "Native", True, NeededBy.MULTI_NODE, id="lws-native"),
        pytest.param(StackComponent.AI_GATEWAY, "Native", True, NeededBy.POOL_ROUTING, id="ai-gateway"),
        pytest.param(StackComponent.PROMETHEUS, "Native", True, NeededBy.NONE, id="prometheus"),
        pytest.param(StackComponent.SCHEDULER, "Native", True, NeededBy.ALL, id="scheduler"),
    ],
)
def test_which_replicas_need_a_component(component: StackComponent, backend: str, secure: bool, want: NeededBy) -> None:
    plan = plan_stack(backend=backend, scheduler="KAI", prometheus="Managed", secure_gateway=secure)
    part = plan.part(component)
    assert part is not None
    assert part.needed_by is want


def test_existing_checks_the_api_versions_modelplane_composes() -> None:
    # The probes name the versions the composers write: a cluster serving an older one is missing.
    composed = {
        StackComponent.CERT_MANAGER: {CERT_MANAGER_API_VERSION},
        StackComponent.GATEWAY: {GATEWAY_API_VERSION, BACKEND_API_VERSION},
        StackComponent.KSERVE: {kserve.API_VERSION},
        StackComponent.LWS: {native.LWS_API_VERSION},
        StackComponent.AI_GATEWAY: {AI_GATEWAY_API_VERSION},
        StackComponent.PROMETHEUS: {MONITORING_API_VERSION},
    }
    for component, versions in composed.items():
        checked = {p.name for p in probes(component, scheduler="None") if p.kind == "APIService"}
        assert checked == {f"{v.rpartition('/')[2]}.{v.rpartition('/')[0]}" for v in versions}, component
    assert set(SCHEDULERS["KAI"].apis) == {kai.QUEUE_API_VERSION, kai.POD_GROUP_API_VERSION}
    assert set(SCHEDULERS["Kueue"].apis) == {kueue.API_VERSION}


def _object(*, manifest: dict[str, Any] | None = None, synced: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if manifest is not None:
        status["atProvider"] = {"manifest": manifest}
    if synced is not None:
        status["conditions"] = [{"type": "Synced", "status": synced}]
    return {"status": status}


_AVAILABLE = {"kind": "Deployment", "status": {"conditions": [{"type": "Available", "status": "True"}]}}
_UNAVAILABLE = {"kind": "Deployment", "status": {"conditions": [{"type": "Available", "status": "False"}]}}


@pytest.mark.parametrize(
    ("kind", "observed", "seen"),
    [
        pytest.param("APIService", _object(manifest={"kind": "APIService"}), Seen.FOUND, id="api-found"),
        pytest.param("APIService", _object(synced="False"), Seen.MISSING, id="api-missing"),
        pytest.param("APIService", _object(), Seen.UNCHECKED, id="api-not-reconciled-yet"),
        pytest.param("APIService", None, Seen.UNCHECKED, id="not-observed-yet"),
        pytest.param("Deployment", _object(manifest=_AVAILABLE), Seen.FOUND, id="controller-available"),
        pytest.param("Deployment", _object(manifest=_UNAVAILABLE), Seen.UNAVAILABLE, id="controller-not-available"),
        pytest.param("Deployment", _object(manifest={"kind": "Deployment"}), Seen.UNAVAILABLE, id="no-status"),
        pytest.param("Deployment", _object(synced="False"), Seen.MISSING, id="controller-missing"),
    ],
)
def test_a_probe_reads_its_observe_only_object(kind: str, observed: dict[str, Any] | None, seen: Seen) -> None:
    probe = next(p for p in probes(StackComponent.CERT_MANAGER, scheduler="None") if p.kind == kind)
    assert finding(probe, observed).seen is seen


def test_the_report_names_what_is_missing_and_what_is_disabled() -> None:
    plan = _plan(certManager=Settings(Mode.EXISTING), draDriver=Settings(Mode.DISABLED))
    cert = plan.part(StackComponent.CERT_MANAGER)
    assert cert is not None
    api, controller = cert.probes
    found = {StackComponent.CERT_MANAGER: presence([Finding(api, Seen.MISSING), Finding(controller, Seen.FOUND)])}
    ready = {i.chart.component: True for i in plan.installs}
    states = {s.component: s for s in component_states(plan, ready, found)}
    assert states[StackComponent.CERT_MANAGER].status() == {
        "name": "certManager",
        "mode": "Existing",
        "ready": False,
        "neededBy": "All",
        "message": "API cert-manager.io/v1 not found",
    }
    assert states[StackComponent.DRA_DRIVER].status()["ready"] is False
    assert states[StackComponent.LWS].status() == {
        "name": "lws",
        "mode": "Managed",
        "ready": True,
        "neededBy": "All",
        "version": CHARTS[Component.LWS].version,
    }
    condition = components_condition(tuple(states.values()), found)
    assert (condition.status, condition.reason, condition.message) == (
        "False",
        "ComponentMissing",
        "certManager (Existing): API cert-manager.io/v1 not found",
    )
    found[StackComponent.CERT_MANAGER] = presence([Finding(api, Seen.FOUND), Finding(controller, Seen.FOUND)])
    condition = components_condition(component_states(plan, ready, found), found)
    assert (condition.status, condition.reason, condition.message) == (
        "True",
        "ComponentsReady",
        "found on the cluster: certManager; Disabled: draDriver (replicas that need them are not placed on this "
        "cluster)",
    )
