"""compose-serving-stack: pinned releases, dependencies first, the Gateway and its address; all validate."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_serving_stack.fn import FunctionRunner
from modelplane.charts import CHARTS, Component, stack_components
from tests.conformance.cli import require_binary, require_crds, resource_validate
from tests.conformance.resources import targets
from tests.conformance.schemas import extensions
from tests.functions import test_compose_inference_cluster as cluster_tests

GATEWAY_HOST = "gateway.modelplane.ai"
READY = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}}


def _stack(backend: str = "KServe", scheduler: str = "None") -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ServingStack",
        "metadata": {"name": "c"},
        "spec": {
            "providerConfigRef": {"name": "c", "kind": "ClusterProviderConfig"},
            "backend": backend,
            "scheduler": {"type": scheduler},
            "gateway": {"gatewayClassName": "modelplane", "port": 80},
        },
    }


def _req(xr: dict[str, Any], observed: dict[str, dict[str, Any]] | None = None) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    for key, obj in (observed or {}).items():
        req.observed.resources[key].resource.update(obj)
    return req


def _run(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    return asyncio.run(FunctionRunner().RunFunction(req, None))


def _desired(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    return {k: resource.struct_to_dict(v.resource) for k, v in rsp.desired.resources.items()}


TLS_KEYS = ("gateway-issuer", "gateway-ca", "gateway-ca-issuer", "gateway-certificate")


def _gateway(*, listeners: tuple[str, ...] = ("https",), ready: bool = True) -> dict[str, Any]:
    """The Gateway's Object as observed: as composed with ``listeners``, with an address."""
    return {
        "spec": {"forProvider": {"manifest": {"spec": {"listeners": [{"name": n} for n in listeners]}}}},
        "status": {
            **(READY["status"] if ready else {}),
            "atProvider": {"manifest": {"status": {"addresses": [{"type": "IPAddress", "value": "192.0.2.7"}]}}},
        },
    }


def _all_ready(
    backend: str, scheduler: str, *, tls: bool = True, listeners: tuple[str, ...] = ("https",)
) -> dict[str, dict[str, Any]]:
    out = {f"release-{c.component}": READY for c in stack_components(backend=backend, scheduler=scheduler)}
    chain = dict.fromkeys(TLS_KEYS, READY) if tls else {}
    return {
        **out,
        "gateway-namespace": READY,
        "gateway-class": READY,
        "gateway": _gateway(listeners=listeners),
        **chain,
    }


@pytest.mark.parametrize(
    ("backend", "scheduler", "first"),
    [
        pytest.param(
            "KServe",
            "None",
            {"cert-manager", "envoy-ai-gateway-crd", "envoy-gateway", "kserve-llmisvc-crd", "lws", "nvidia-dra-driver"},
            id="kserve",
        ),
        pytest.param(
            "Native",
            "KAI",
            {"cert-manager", "envoy-ai-gateway-crd", "envoy-gateway", "kai-scheduler", "lws", "nvidia-dra-driver"},
            id="native-kai",
        ),
        pytest.param(
            "KServe",
            "Kueue",
            {
                "cert-manager",
                "envoy-ai-gateway-crd",
                "envoy-gateway",
                "kserve-llmisvc-crd",
                "kueue",
                "lws",
                "nvidia-dra-driver",
            },
            id="kserve-kueue",
        ),
    ],
)
def test_first_pass_composes_only_what_has_no_dependencies(backend: str, scheduler: str, first: set[str]) -> None:
    rsp = _run(_req(_stack(backend, scheduler)))
    desired = _desired(rsp)
    # The stack's anchor first, whatever waits (test_compose_serving_stack_anchor).
    assert {k.removeprefix("release-") for k in desired} == {*first, "stack-anchor"}
    assert rsp.desired.composite.ready == fnv1.READY_FALSE
    assert rsp.conditions[0].reason == "WaitingForDependencies"


def test_a_release_is_pinned_and_reaches_the_cluster() -> None:
    release = _desired(_run(_req(_stack())))["release-lws"]
    chart = CHARTS[Component.LWS]
    assert release == {
        "apiVersion": "helm.m.crossplane.io/v1beta1",
        "kind": "Release",
        "metadata": {"name": "c-lws", "namespace": "crossplane-system"},
        "spec": {
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "c"},
            "forProvider": {
                "chart": {"name": chart.name, "repository": chart.repository, "version": chart.version},
                "namespace": chart.namespace,
                "wait": True,
            },
        },
    }


def test_dependencies_ready_unlock_kserve_and_the_gateway() -> None:
    observed = {
        f"release-{c}": READY
        for c in ("cert-manager", "envoy-gateway", "kserve-llmisvc-crd", "lws", "nvidia-dra-driver")
    }
    desired = _desired(_run(_req(_stack(), observed)))
    assert "release-kserve-llmisvc" in desired
    assert desired["gateway"]["spec"]["forProvider"]["manifest"]["metadata"] == {
        "name": "modelplane",
        "namespace": "modelplane-system",
    }


def test_everything_ready_reports_the_gateway_address() -> None:
    rsp = _run(_req(_stack("KServe", "KAI"), _all_ready("KServe", "KAI")))
    status = resource.struct_to_dict(rsp.desired.composite.resource)["status"]
    assert status["gateway"] == {
        "address": "192.0.2.7",
        "url": "https://192.0.2.7",
        "tls": {"caSecretRef": {"name": "c-gateway-ca", "namespace": "crossplane-system"}, "hostname": GATEWAY_HOST},
    }
    assert [r["name"] for r in status["releases"]] == sorted(r["name"] for r in status["releases"])
    assert all(r["ready"] for r in status["releases"])
    assert rsp.desired.composite.ready == fnv1.READY_TRUE
    assert rsp.conditions[0].reason == "Installed"


def test_a_composed_release_stays_when_its_dependency_turns_unready() -> None:
    observed = {"release-kserve-llmisvc": {"apiVersion": "helm.m.crossplane.io/v1beta1", "kind": "Release"}}
    assert "release-kserve-llmisvc" in _desired(_run(_req(_stack(), observed)))


def _gateway_spec(desired: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return dict(desired["gateway"]["spec"]["forProvider"]["manifest"]["spec"])


def _tls_condition(rsp: fnv1.RunFunctionResponse) -> Any:
    return next(c for c in rsp.conditions if c.type == "GatewayTLS")


def _with_gateway(**gateway: Any) -> dict[str, Any]:
    xr = _stack("Native", "None")
    xr["spec"]["gateway"].update(gateway)
    return xr


@pytest.mark.parametrize(
    ("gateway", "observed", "listeners", "url", "reason"),
    [
        pytest.param({}, {}, [("https", 443)], "https://192.0.2.7", "TLSReady", id="new-cluster-https-only"),
        pytest.param(
            {},
            {"listeners": ("http",), "tls": False},
            [("https", 443), ("http", 80)],
            "http://192.0.2.7",
            "TLSPending",
            id="upgraded-keeps-http-while-tls-is-pending",
        ),
        pytest.param(
            {},
            {"listeners": ("https", "http")},
            [("https", 443), ("http", 80)],
            "https://192.0.2.7",
            "InsecureListenerKept",
            id="upgraded-moves-to-https-and-keeps-http",
        ),
        pytest.param(
            {"insecure": False},
            {"listeners": ("https", "http")},
            [("https", 443)],
            "https://192.0.2.7",
            "TLSReady",
            id="insecure-false-removes-the-http-listener",
        ),
        pytest.param(
            {"insecure": True, "port": 8080},
            {"listeners": ("http",), "tls": False},
            [("http", 8080)],
            "http://192.0.2.7:8080",
            "Insecure",
            id="insecure-true-plain-http-only",
        ),
        pytest.param({"httpsPort": 8443}, {}, [("https", 8443)], "https://192.0.2.7:8443", "TLSReady", id="https-port"),
        pytest.param({}, {"tls": False}, [("https", 443)], "", "TLSPending", id="new-cluster-no-url-before-tls"),
    ],
)
def test_the_gateway_serves_tls_unless_told_otherwise(
    gateway: dict[str, Any], observed: dict[str, Any], listeners: list[tuple[str, int]], url: str, reason: str
) -> None:
    state = _all_ready("Native", "None", **observed)
    rsp = _run(_req(_with_gateway(**gateway), state))
    desired = _desired(rsp)
    assert [(x["name"], x["port"]) for x in _gateway_spec(desired)["listeners"]] == listeners
    status = resource.struct_to_dict(rsp.desired.composite.resource)["status"]["gateway"]
    assert status.get("url", "") == url
    assert ("tls" in status) == url.startswith("https")
    condition = _tls_condition(rsp)
    assert condition.reason == reason
    if reason != "TLSReady":
        assert "spec.gateway.insecure" in condition.message or reason == "TLSPending"
    # The chain exists whenever the gateway serves TLS; never with insecure true.
    assert all((k in desired) == (gateway.get("insecure") is not True) for k in TLS_KEYS)


def test_the_https_listener_terminates_with_the_certificate_the_chain_issues() -> None:
    desired = _desired(_run(_req(_stack("Native", "None"), _all_ready("Native", "None"))))
    (listener,) = _gateway_spec(desired)["listeners"]
    assert listener["tls"] == {
        "mode": "Terminate",
        "certificateRefs": [{"group": "", "kind": "Secret", "name": "modelplane-gateway-tls"}],
    }
    manifests = {k: desired[k]["spec"]["forProvider"]["manifest"] for k in TLS_KEYS}
    assert manifests["gateway-certificate"]["spec"]["secretName"] == "modelplane-gateway-tls"
    assert manifests["gateway-certificate"]["spec"]["dnsNames"] == [GATEWAY_HOST]
    assert (
        manifests["gateway-certificate"]["spec"]["issuerRef"]["name"]
        == manifests["gateway-ca-issuer"]["metadata"]["name"]
    )
    assert manifests["gateway-ca-issuer"]["spec"] == {
        "ca": {"secretName": manifests["gateway-ca"]["spec"]["secretName"]}
    }
    assert manifests["gateway-ca"]["spec"]["isCA"] is True
    assert manifests["gateway-issuer"]["spec"] == {"selfSigned": {}}


def test_only_the_ca_certificate_reaches_the_control_plane() -> None:
    desired = _desired(_run(_req(_stack("Native", "None"), _all_ready("Native", "None"))))
    ca = desired["gateway-ca"]["spec"]
    assert ca["writeConnectionSecretToRef"] == {"name": "c-gateway-ca"}
    assert [(d["kind"], d["name"], d["fieldPath"], d["toConnectionSecretKey"]) for d in ca["connectionDetails"]] == [
        ("Secret", "modelplane-gateway-ca", "data[ca.crt]", "ca.crt")
    ]
    # No other Object publishes anything: the keys stay on the workload cluster.
    others = [k for k, v in desired.items() if k != "gateway-ca" and "connectionDetails" in v.get("spec", {})]
    assert others == []


def test_the_chain_waits_for_cert_manager() -> None:
    observed = {f"release-{c}": READY for c in ("envoy-gateway", "lws", "nvidia-dra-driver")}
    rsp = _run(_req(_stack("Native", "None"), observed))
    desired = _desired(rsp)
    assert "gateway" in desired
    assert not any(k in desired for k in TLS_KEYS)
    assert _tls_condition(rsp).reason == "TLSPending"


def _flat(xr: dict[str, Any], desired: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The composed resources and the manifest of each Object, without the XR."""
    return [t.obj for t in targets(xr, [xr, *desired.values()])][1:]


# The stack's anchor as observed, with the UID that makes it a second owner of everything else.
_ANCHOR_UID = "a11c0000-0000-4000-8000-000000000001"
_ANCHOR = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "c-stack-anchor", "namespace": "crossplane-system", "uid": _ANCHOR_UID},
}


def _composed_documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for backend, scheduler in (("KServe", "KAI"), ("Native", "Kueue"), ("KServe", "None")):
        xr = _stack(backend, scheduler)
        observed = {**_all_ready(backend, scheduler, listeners=("https", "http")), "stack-anchor": _ANCHOR}
        docs.extend(_flat(xr, _desired(_run(_req(xr, observed)))))
    kueue: dict[str, Any] = {"type": "Kueue", "kueue": {"localQueueName": "q", "clusterQueueName": "cq"}}
    kai: dict[str, Any] = {"type": "KAI", "kai": {"queue": "inference"}}
    for source in ("GKE", "EKS", "AKS"):
        xr = cluster_tests._cluster(source)
        rsp = cluster_tests._run(cluster_tests._req(xr, classes=[cluster_tests._class("h100", source)]))
        docs.extend(_flat(xr, cluster_tests._desired(rsp)))
    for settings in (kueue, kai):
        xr = cluster_tests._cluster(scheduler=settings)
        docs.extend(_flat(xr, cluster_tests._desired(cluster_tests._run(cluster_tests._req(xr)))))
    return docs


def test_every_composed_object_validates_against_its_crd(tmp_path: Path) -> None:
    binary = require_binary()
    require_crds()
    docs = _composed_documents()
    verdicts = resource_validate(binary, extensions(docs, tmp_path / "schemas"), docs, tmp_path / "run")
    assert [f"{v.gvk} {v.name}: {v.errors}" for v in verdicts if not v.ok] == []
    kinds = {d["kind"] for d in docs}
    assert {"Release", "Object", "ClusterProviderConfig", "NodePool", "NodeGroup", "KubernetesClusterNodePool"} <= kinds
    assert {"Issuer", "Certificate", "Gateway", "ConfigMap"} <= kinds
    # The stack's objects name the anchor as an owner (Crossplane adds the ServingStack as their controller).
    anchor = {"apiVersion": "v1", "kind": "ConfigMap", "name": "c-stack-anchor", "uid": _ANCHOR_UID}
    assert all(d["metadata"]["ownerReferences"] == [anchor] for d in docs if d["kind"] == "Release")


@pytest.mark.parametrize(
    ("prometheus", "installed"),
    [
        pytest.param("Managed", True, id="managed-installs-kube-prometheus-stack"),
        pytest.param("Installed", False, id="installed-uses-the-cluster-s-own"),
        pytest.param("None", False, id="none"),
    ],
)
def test_managed_prometheus_installs_a_pinned_kube_prometheus_stack(prometheus: str, installed: bool) -> None:
    charts = {c.component: c for c in stack_components(backend="Native", scheduler="None", prometheus=prometheus)}
    assert (Component.KUBE_PROMETHEUS_STACK in charts) == installed
    # The gateway calls endpoint pickers through Envoy AI Gateway, which every stack installs.
    assert {Component.AI_GATEWAY_CRDS, Component.AI_GATEWAY} <= set(charts)
    if installed:
        chart = charts[Component.KUBE_PROMETHEUS_STACK]
        assert (chart.name, chart.version) == ("kube-prometheus-stack", "88.0.0")
