"""The ServingStack function: the Helm releases a workload cluster needs, dependencies first, and its Gateway.

Each component is a provider-helm ``Release`` of a chart pinned in
``modelplane.charts``, composed only once every component it depends on
reports Ready (a Release composed before stays composed). Once Envoy Gateway
is Ready, the GatewayClass and the workload Gateway follow as
provider-kubernetes Objects, and once cert-manager is Ready the certificate
chain of its HTTPS listener (``modelplane.routing.workload_tls``); the Gateway's
address, as the Object observes it, becomes ``status.gateway.address``, and the
URL and CA the control plane sends to and verifies with ``status.gateway.url``
and ``status.gateway.tls``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import structlog
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.charts import Chart, Component, stack_components
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import parse_or_keep
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import name_of
from modelplane.layout import Layout
from modelplane.names import (
    CONTROL_PLANE_NAMESPACE,
    GATEWAY_CA_ISSUER_KEY,
    GATEWAY_CA_KEY,
    GATEWAY_CERTIFICATE_KEY,
    GATEWAY_CLASS_KEY,
    GATEWAY_ISSUER_KEY,
    GATEWAY_KEY,
    GATEWAY_NAMESPACE_KEY,
    WORKLOAD_GATEWAY_NAME,
    WORKLOAD_GATEWAY_NAMESPACE,
    bounded_name,
    gateway_ca_secret,
    helm_release_name,
    is_release_key,
    release_key,
)
from modelplane.problems import Problem, describe
from modelplane.remote import Readiness, ReadinessRule, observed_manifest, readiness_for, wrap
from modelplane.routing import workload_tls
from modelplane.routing.backend_tls import UpstreamTLS
from modelplane_models.serving_stack import Gateway, ServingStack

RELEASE_API_VERSION = "helm.m.crossplane.io/v1beta1"
ENVOY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
# What the stack reads of the Object carrying its Gateway: the addresses Envoy Gateway gave it.
_OBSERVED_GATEWAY: Layout = {"status": {"atProvider": {"manifest": {"status": {"addresses": [{"value": str}]}}}}}
_PROGRAMMED = ReadinessRule(
    Readiness.DERIVE_FROM_CEL_QUERY,
    "object.status.conditions.exists(c, c.type == 'Programmed' && c.status == 'True')",
)
_CERT_READY = ReadinessRule(
    Readiness.DERIVE_FROM_CEL_QUERY,
    "has(object.status.conditions) && object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
)
# The Gateway as composed before: whether it had the plain HTTP listener (kept on upgrade, see _listeners).
_COMPOSED_GATEWAY: Layout = {"spec": {"forProvider": {"manifest": {"spec": {"listeners": [{"name": str}]}}}}}
_ACCEPTED = ReadinessRule(
    Readiness.DERIVE_FROM_CEL_QUERY,
    "object.status.conditions.exists(c, c.type == 'Accepted' && c.status == 'True')",
)


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Pick the charts, compose the Releases whose dependencies are Ready, then the Gateway, then status."""
    xr = parse_or_keep(ledger, log, ServingStack, _invalid, _spec_required)
    if xr is None or xr.spec is None:
        return
    spec = xr.spec
    name = name_of(xr)
    provider_config = spec.providerConfigRef.name
    charts = stack_components(
        backend=spec.backend or "KServe",
        scheduler=(spec.scheduler.type if spec.scheduler else None) or "None",
        prometheus=spec.prometheus or "None",
    )
    ready: dict[Component, bool] = {}
    releases: list[dict[str, Any]] = []
    waiting: list[str] = []
    for chart in charts:
        key = release_key(chart.component)
        blocked = [str(d) for d in chart.depends_on if not ready.get(d, False)]
        if blocked and key not in req.observed.resources:
            waiting.append(f"{chart.component} waits for {', '.join(blocked)}")
            ready[chart.component] = False
        else:
            ready[chart.component] = inputs.ready(req, rsp, key).true
            ledger.put(key, _release(name, provider_config, chart), ready=ready[chart.component])
        releases.append(
            {
                "name": str(chart.component),
                "chart": chart.name,
                "version": chart.version,
                "ready": ready[chart.component],
            }
        )
    # A component the backend or scheduler no longer needs is uninstalled: the user's change.
    ledger.remove_unwritten(is_release_key, lambda key: f"{key} is not a component of this stack any more")
    gateway = _write_gateway(
        ledger,
        name,
        provider_config,
        spec.gateway or Gateway(),
        envoy_ready=ready[Component.ENVOY_GATEWAY],
        cert_manager_ready=ready.get(Component.CERT_MANAGER, False),
    )
    if not ready[Component.ENVOY_GATEWAY] and not _gateway_composed(req):
        waiting.append("the Gateway waits for envoy-gateway")
    status: dict[str, Any] = {"releases": sorted(releases, key=lambda r: r["name"])}
    if gateway.address:
        status["gateway"] = {"address": gateway.address}
        if gateway.url:
            status["gateway"]["url"] = gateway.url
        if gateway.tls is not None:
            status["gateway"]["tls"] = gateway.tls.spec()
    resource.update(rsp.desired.composite, {"status": status})
    installed = all(ready.values()) and gateway.ready and bool(gateway.url)
    if installed:
        condition = Condition(
            Type.INSTALLED, Status.TRUE, Reason.INSTALLED, f"{len(charts)} releases ready, gateway at {gateway.url}"
        )
    elif waiting:
        condition = Condition(Type.INSTALLED, Status.FALSE, Reason.WAITING_FOR_DEPENDENCIES, "; ".join(waiting))
    else:
        pending = [str(c) for c, r in ready.items() if not r] + ([] if gateway.ready and gateway.url else ["gateway"])
        condition = Condition(Type.INSTALLED, Status.FALSE, Reason.INSTALLING, f"not ready yet: {', '.join(pending)}")
    set_conditions(rsp, condition, gateway.condition)
    set_ready(rsp, ready=installed)
    log.debug("composed", stack=name, installed=installed)


FunctionRunner = functools.partial(ComposeRunner, compose)


def _invalid(problems: list[Problem]) -> Condition:
    # The model reads a missing spec as None; anything else names its field.
    missing = [str(p) for p in problems] == ["spec: required"]
    message = describe(problems) if missing else f"the ServingStack is invalid: {describe(problems)}"
    return Condition(Type.INSTALLED, Status.FALSE, Reason.INVALID_SPEC, message)


def _spec_required(xr: ServingStack) -> list[Problem]:
    return [Problem("spec", "required")] if xr.spec is None else []


def _release(stack: str, provider_config: str, chart: Chart) -> dict[str, Any]:
    for_provider: dict[str, Any] = {
        "chart": {"name": chart.name, "repository": chart.repository, "version": chart.version},
        "namespace": chart.namespace,
        "wait": True,
    }
    if chart.values:
        for_provider["values"] = dict(chart.values)
    return {
        "apiVersion": RELEASE_API_VERSION,
        "kind": "Release",
        "metadata": {"name": helm_release_name(stack, str(chart.component)), "namespace": CONTROL_PLANE_NAMESPACE},
        "spec": {
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": provider_config},
            "forProvider": for_provider,
        },
    }


@dataclass(frozen=True)
class GatewayState:
    """The workload Gateway as composed and observed: what the stack publishes in ``status.gateway``."""

    ready: bool
    address: str
    url: str
    tls: UpstreamTLS | None
    condition: Condition


_TLS_KEYS = (GATEWAY_ISSUER_KEY, GATEWAY_CA_KEY, GATEWAY_CA_ISSUER_KEY, GATEWAY_CERTIFICATE_KEY)


def _write_gateway(
    ledger: Ledger,
    stack: str,
    provider_config: str,
    gateway: Gateway,
    *,
    envoy_ready: bool,
    cert_manager_ready: bool,
) -> GatewayState:
    """Compose the GatewayClass, Gateway and its certificate chain once their controllers are Ready.

    1. Nothing before Envoy Gateway is Ready (unless composed before: then it all stays).
    2. The listeners: HTTPS unless ``insecure`` is true; plain HTTP with ``insecure`` true, or when
       ``insecure`` is unset and the Gateway composed before had it (an upgraded cluster's endpoints
       may still send over HTTP: dropping it would cut them off).
    3. The cert-manager chain once cert-manager is Ready; the CA's Object copies ``ca.crt`` (only)
       to a control-plane Secret. With ``insecure`` true a chain composed before goes (the user's change).
    4. What the control plane is told: an https URL with the CA once the chain and Gateway are
       Ready, else an http URL only where the HTTP listener exists, else nothing.
    """
    pending = GatewayState(
        ready=False,
        address="",
        url="",
        tls=None,
        condition=Condition(Type.GATEWAY_TLS, Status.FALSE, Reason.TLS_PENDING, "the Gateway waits for envoy-gateway"),
    )
    # 1. Envoy Gateway first.
    if not envoy_ready and not _gateway_composed(ledger.req):
        return pending
    class_name = gateway.gatewayClassName or "modelplane"
    http_port, https_port = gateway.port or 80, gateway.httpsPort or 443
    # 2. The listeners.
    secure = gateway.insecure is not True
    kept_http = gateway.insecure is None and _had_http_listener(ledger.req, ledger.rsp)
    http = gateway.insecure is True or kept_http
    listeners = ([workload_tls.https_listener(https_port)] if secure else []) + (
        [workload_tls.http_listener(http_port)] if http else []
    )
    manifests: dict[str, tuple[dict[str, Any], ReadinessRule]] = {
        GATEWAY_NAMESPACE_KEY: (
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOAD_GATEWAY_NAMESPACE}},
            readiness_for("Namespace"),
        ),
        GATEWAY_CLASS_KEY: (
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "GatewayClass",
                "metadata": {"name": class_name},
                "spec": {"controllerName": ENVOY_CONTROLLER},
            },
            _ACCEPTED,
        ),
        GATEWAY_KEY: (
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "Gateway",
                "metadata": {"name": WORKLOAD_GATEWAY_NAME, "namespace": WORKLOAD_GATEWAY_NAMESPACE},
                "spec": {"gatewayClassName": class_name, "listeners": listeners},
            },
            _PROGRAMMED,
        ),
    }
    # 3. The certificate chain.
    chain = secure and (cert_manager_ready or any(k in ledger.req.observed.resources for k in _TLS_KEYS))
    if chain:
        manifests[GATEWAY_ISSUER_KEY] = (workload_tls.self_signed_issuer(), _CERT_READY)
        manifests[GATEWAY_CA_KEY] = (workload_tls.ca_certificate(), _CERT_READY)
        manifests[GATEWAY_CA_ISSUER_KEY] = (workload_tls.ca_issuer(), _CERT_READY)
        manifests[GATEWAY_CERTIFICATE_KEY] = (workload_tls.serving_certificate(), _CERT_READY)
    elif not secure:
        ledger.remove(_TLS_KEYS, "spec.gateway.insecure is true: the gateway serves no TLS")
    ready: dict[str, bool] = {}
    for key, (manifest, readiness) in manifests.items():
        obj = wrap(
            manifest,
            name=bounded_name(f"{stack}-{key}", 253),
            namespace=CONTROL_PLANE_NAMESPACE,
            provider_config=provider_config,
            readiness=readiness,
        )
        if key == GATEWAY_CA_KEY:
            # The CA certificate, never its key, reaches the control plane, where endpoints verify against it.
            obj["spec"]["connectionDetails"] = workload_tls.connection_details()
            obj["spec"]["writeConnectionSecretToRef"] = {"name": gateway_ca_secret(stack)}
        ready[key] = inputs.ready(ledger.req, ledger.rsp, key).true
        ledger.put(key, obj, ready=ready[key])
    # 4. What the control plane is told.
    address = _address(ledger.req, ledger.rsp)
    gateway_ready = ready[GATEWAY_KEY]
    tls_ready = chain and all(ready[k] for k in _TLS_KEYS)
    tls: UpstreamTLS | None = None
    url = ""
    if address and gateway_ready and tls_ready:
        url = _url("https", address, https_port, 443)
        tls = UpstreamTLS(gateway_ca_secret(stack), CONTROL_PLANE_NAMESPACE, workload_tls.GATEWAY_TLS_HOSTNAME)
    elif address and http:
        url = _url("http", address, http_port, 80)
    condition = _tls_condition(
        gateway, tls=tls, kept_http=kept_http, waiting=[k for k in _TLS_KEYS if not ready.get(k, False)]
    )
    return GatewayState(
        ready=all(ready.values()) and (tls_ready or not secure), address=address, url=url, tls=tls, condition=condition
    )


def _tls_condition(gateway: Gateway, *, tls: UpstreamTLS | None, kept_http: bool, waiting: list[str]) -> Condition:
    http_port, https_port = gateway.port or 80, gateway.httpsPort or 443
    if gateway.insecure is True:
        message = (
            f"spec.gateway.insecure is true: the gateway serves plain HTTP on port {http_port} and the control "
            "plane sends to it unencrypted"
        )
        return Condition(Type.GATEWAY_TLS, Status.FALSE, Reason.INSECURE, message)
    if tls is None:
        message = f"TLS is not ready yet: waiting for {', '.join(waiting) or 'the Gateway'}"
        if kept_http:
            message += f"; the HTTP listener on port {http_port} composed before keeps serving meanwhile"
        return Condition(Type.GATEWAY_TLS, Status.FALSE, Reason.TLS_PENDING, message)
    serving = (
        f"serves HTTPS on port {https_port} with a certificate for {tls.hostname} from the cluster's own CA, "
        f"verified by the control plane against Secret {tls.ca_namespace}/{tls.ca_secret}"
    )
    if kept_http:
        message = (
            f"spec.gateway.insecure is unset and the gateway also keeps the HTTP listener on port {http_port} it "
            f"had before TLS, so that endpoints still sent over HTTP keep routing; it {serving}. Set "
            "spec.gateway.insecure: false to remove the HTTP listener once every endpoint on the cluster uses https"
        )
        return Condition(Type.GATEWAY_TLS, Status.FALSE, Reason.INSECURE_LISTENER_KEPT, message)
    return Condition(Type.GATEWAY_TLS, Status.TRUE, Reason.TLS_READY, f"the gateway {serving}")


def _url(scheme: str, address: str, port: int, default_port: int) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"{scheme}://{host}" if port == default_port else f"{scheme}://{host}:{port}"


def _had_http_listener(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> bool:
    """Whether the Gateway composed before had the plain HTTP listener."""
    observed = inputs.observed(req, rsp, GATEWAY_KEY, _COMPOSED_GATEWAY)
    manifest = (((observed or {}).get("spec") or {}).get("forProvider") or {}).get("manifest") or {}
    listeners = (manifest.get("spec") or {}).get("listeners") or []
    return any(isinstance(item, dict) and item.get("name") == workload_tls.HTTP_LISTENER for item in listeners)


def _gateway_composed(req: fnv1.RunFunctionRequest) -> bool:
    """Whether any of the Gateway's objects was composed before (then all of them stay composed)."""
    return any(k in req.observed.resources for k in (GATEWAY_NAMESPACE_KEY, GATEWAY_CLASS_KEY, GATEWAY_KEY, *_TLS_KEYS))


def _address(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> str:
    """The Gateway's first address, as provider-kubernetes observed the Gateway."""
    observed = inputs.observed(req, rsp, GATEWAY_KEY, _OBSERVED_GATEWAY)
    manifest = observed_manifest(observed) if observed is not None else None
    addresses = ((manifest or {}).get("status") or {}).get("addresses") or []
    return str(addresses[0].get("value") or "") if addresses else ""
