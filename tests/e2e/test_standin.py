"""The workload stand-in's rules, without an API server (these run under `make test`, not `make e2e`).

Each rule must write the status that the real controller's readiness signal
reads (the same signals ``modelplane.remote`` and the backends judge), and
write nothing once that status is there, so the stand-in does not churn.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.standin import (
    CONTROL_PLANE_RULES,
    LLM_INFERENCE_SERVICE,
    WORKLOAD_RULES,
    Loading,
    gateway_address,
    issue,
)


def _obj(api_version: str, kind: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "x", "namespace": "ns", "generation": 3},
        "spec": spec or {},
    }


def _settle(rules: dict[tuple[str, str], Any], obj: dict[str, Any], scope: str) -> dict[str, Any]:
    status = rules[(obj["apiVersion"], obj["kind"])](obj, scope)
    assert status is not None, "the rule wrote nothing on a fresh object"
    done = {**obj, "status": status}
    assert rules[(obj["apiVersion"], obj["kind"])](done, scope) is None, "the rule writes again once settled"
    return done


@pytest.mark.parametrize(
    ("rules", "scope"),
    [
        pytest.param(WORKLOAD_RULES, "workload-b", id="workload"),
        pytest.param(CONTROL_PLANE_RULES, "control-plane", id="control-plane"),
    ],
)
def test_gateways_are_programmed_with_the_scope_address(rules: dict[tuple[str, str], Any], scope: str) -> None:
    done = _settle(rules, _obj("gateway.networking.k8s.io/v1", "Gateway"), scope)
    types = {c["type"]: c["status"] for c in done["status"]["conditions"]}
    assert types == {"Accepted": "True", "Programmed": "True"}
    assert done["status"]["addresses"] == [{"type": "IPAddress", "value": gateway_address(scope)}]


def test_routes_are_accepted_by_every_parent() -> None:
    refs = [{"name": "a", "namespace": "gw"}, {"name": "b", "namespace": "gw"}]
    done = _settle(WORKLOAD_RULES, _obj("gateway.networking.k8s.io/v1", "HTTPRoute", {"parentRefs": refs}), "w")
    assert [p["parentRef"] for p in done["status"]["parents"]] == refs


def test_helm_releases_are_ready_and_synced() -> None:
    done = _settle(CONTROL_PLANE_RULES, _obj("helm.m.crossplane.io/v1beta1", "Release"), "control-plane")
    assert {c["type"] for c in done["status"]["conditions"]} == {"Ready", "Synced"}


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _service(generation: int) -> dict[str, Any]:
    obj = _obj(*LLM_INFERENCE_SERVICE)
    obj["metadata"] = {**obj["metadata"], "uid": "u-1", "generation": generation}
    return obj


# Each row: the loading time, then (seconds the clock moves before the step, the generation the
# object has at the step, whether its model has loaded at that step).
LOADING_CASES = [
    pytest.param(0.0, [(0, 1, True), (0, 2, True)], id="default-ready-at-once-also-after-a-change"),
    pytest.param(3.0, [(0, 1, False), (2.9, 1, False), (0.2, 1, True), (5, 1, True)], id="new-loads-then-ready"),
    pytest.param(
        3.0, [(0, 1, False), (4, 1, True), (1, 2, False), (2, 2, False), (1.5, 2, True)], id="spec-change-loads"
    ),
    pytest.param(
        3.0, [(0, 1, False), (1, 2, False), (2.5, 2, False), (0.6, 2, True)], id="change-while-loading-restarts"
    ),
]


@pytest.mark.parametrize(("seconds", "steps"), LOADING_CASES)
def test_a_service_loads_for_its_generation(seconds: float, steps: list[tuple[float, int, bool]]) -> None:
    clock = _Clock()
    loading = Loading(seconds, clock=clock)
    for moved, generation, loaded in steps:
        clock.now += moved
        assert loading.loaded(_service(generation), "workload-a") is loaded, (moved, generation)


@pytest.mark.parametrize(
    ("kind", "signal"),
    [
        pytest.param("Issuer", "Ready", id="issuer"),
        pytest.param("Certificate", "Ready", id="certificate"),
    ],
)
def test_cert_manager_objects_are_ready(kind: str, signal: str) -> None:
    done = _settle(WORKLOAD_RULES, _obj("cert-manager.io/v1", kind), "workload-a")
    assert [(c["type"], c["status"]) for c in done["status"]["conditions"]] == [(signal, "True")]


def test_a_backend_tls_policy_is_accepted_as_the_endpoint_function_reads_it() -> None:
    from modelplane.routing import CONTROLLER_NAME  # noqa: PLC0415 - the signal the endpoint function reads
    from modelplane.routing.backend_tls import policy_accepted  # noqa: PLC0415

    obj = _obj("gateway.networking.k8s.io/v1", "BackendTLSPolicy")
    assert not policy_accepted(obj, CONTROLLER_NAME)
    assert policy_accepted(_settle(CONTROL_PLANE_RULES, obj, "control-plane"), CONTROLLER_NAME)


class _Secrets:
    """Just enough of Kube for ``issue``: Secrets by (namespace, name)."""

    def __init__(self) -> None:
        self.secrets: dict[tuple[str, str], dict[str, Any]] = {}

    def get(self, _api_version: str, _kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.secrets.get((namespace or "", name))

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.secrets[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj
        return obj


def test_a_certificate_s_secret_carries_the_ca_beside_the_certificate() -> None:
    kube = _Secrets()
    certificate = _obj("cert-manager.io/v1", "Certificate", {"secretName": "modelplane-gateway-ca"})
    issue(kube, certificate)  # type: ignore[arg-type]  # a fake Kube with get and apply
    issue(kube, certificate)  # type: ignore[arg-type]  # written once
    (secret,) = kube.secrets.values()
    assert sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    assert secret["metadata"] == {"name": "modelplane-gateway-ca", "namespace": "ns"}
