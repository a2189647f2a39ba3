"""The ServingStack function: each component installed, checked or left out, dependencies first, and its Gateway.

``modelplane.stack.plan`` decides each component's mode (``spec.components``). A Managed
one is a provider-helm ``Release`` per chart of ``modelplane.charts`` with the component's
overrides and ``spec.registry``'s mirrors, composed only once every component it depends
on is Ready (a Release composed before stays composed); an Existing one is checked through
Observe-only Objects (``existing``) and reported in ``status.components`` and the
ComponentsReady condition; a Disabled one is left out. Once Envoy Gateway is Ready
(installed or found), the GatewayClass and the workload Gateway follow as
provider-kubernetes Objects, and once cert-manager is Ready the certificate chain of its
HTTPS listener (``modelplane.routing.workload_tls``); the Gateway's address, as the Object
observes it, becomes ``status.gateway.address``, and the URL and CA the control plane sends
to and verifies with ``status.gateway.url`` and ``status.gateway.tls``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_serving_stack.anchor import anchor_stack, write_anchor
from compose_serving_stack.existing import hand_over, write_probes
from compose_serving_stack.settings import registry_of, settings_of
from modelplane.charts import Component
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
from modelplane.stack.components import Mode, StackComponent, charts_of
from modelplane.stack.overrides import Install
from modelplane.stack.plan import StackPlan, plan_stack
from modelplane.stack.presence import Presence
from modelplane.stack.report import component_states, components_condition
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
    """Compose the stack (``_compose``), then anchor what it composed or kept, whatever path the call took.

    The anchor (``anchor``) co-owns everything the stack composes; the ModelReplicas on its cluster keep
    it with Usages, so the stack outlives its cluster's deletion until they have moved.
    """
    _compose(req, rsp, ledger, log)
    ref = anchor_stack(ledger)
    if ref is not None:
        # Beside whatever status the call wrote, not instead of it.
        rsp.desired.composite.resource.fields["status"].struct_value.update({"anchorRef": ref})


def _compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Plan the components, check the Existing ones, compose the Managed releases whose dependencies are Ready.

    The stack's anchor (``anchor.write_anchor``) is composed first, whatever the plan.

    1. The plan (``modelplane.stack.plan``): each component Managed, Existing or Disabled.
    2. Existing components: their probes; a component no longer Managed hands its releases over.
    3. Managed releases, dependencies first: a release waits for every dependency that is Managed and
       not Ready, or Existing and not found; a Disabled one is not waited for.
    4. The Gateway, once Envoy Gateway is Ready (installed or found), unless it is Disabled.
    5. Status: the releases, the components, the gateway; Installed, ComponentsReady and GatewayTLS.
    """
    xr = parse_or_keep(ledger, log, ServingStack, _invalid, _spec_required)
    if xr is None or xr.spec is None:
        return
    spec = xr.spec
    name = name_of(xr)
    provider_config = spec.providerConfigRef.name
    gateway_spec = spec.gateway or Gateway()
    write_anchor(ledger, name)
    scheduler = (spec.scheduler.type if spec.scheduler else None) or "None"
    # 1. The plan.
    plan = plan_stack(
        backend=spec.backend or "KServe",
        scheduler=scheduler,
        prometheus=spec.prometheus or "None",
        secure_gateway=gateway_spec.insecure is not True,
        settings=settings_of(spec.components),
        registry=registry_of(spec.registry),
    )
    # 2. What the stack does not install.
    found = write_probes(ledger, name, provider_config, plan)
    hand_over(ledger, plan, scheduler)
    # 3. The Managed releases.
    releases = _write_releases(ledger, name, provider_config, plan, _gates(plan, found, scheduler))
    # A component the backend or scheduler no longer needs is uninstalled: the user's change.
    ledger.remove_unwritten(is_release_key, lambda key: f"{key} is not a component of this stack any more")
    # 4. The Gateway.
    disabled = {p.component for p in plan.parts if p.mode is Mode.DISABLED}
    serves = StackComponent.GATEWAY not in disabled or _gateway_composed(req)
    envoy_ready = StackComponent.GATEWAY not in disabled and releases.ready.get(Component.ENVOY_GATEWAY, False)
    gateway = _write_gateway(
        ledger,
        name,
        provider_config,
        gateway_spec,
        envoy_ready=envoy_ready,
        cert_manager=_CertManager(
            ready=StackComponent.CERT_MANAGER not in disabled and releases.ready.get(Component.CERT_MANAGER, False),
            disabled=StackComponent.CERT_MANAGER in disabled,
        ),
    )
    if serves and not envoy_ready and not _gateway_composed(req):
        releases.waiting.setdefault(Component.ENVOY_GATEWAY, "the Gateway waits for envoy-gateway")
    # 5. Status and conditions.
    states = component_states(plan, releases.ready, found, releases.waiting)
    status: dict[str, Any] = {"components": [s.status() for s in states], "releases": releases.status}
    if gateway.address:
        status["gateway"] = {"address": gateway.address}
        if gateway.url:
            status["gateway"]["url"] = gateway.url
        if gateway.tls is not None:
            status["gateway"]["tls"] = gateway.tls.spec()
    resource.update(rsp.desired.composite, {"status": status})
    installed = _installed(plan, releases, gateway, serves=serves)
    set_conditions(rsp, installed, components_condition(states, found), gateway.condition)
    set_ready(rsp, ready=installed.status == Status.TRUE)
    log.debug("composed", stack=name, installed=installed.status == Status.TRUE)


@dataclass(frozen=True)
class _Gates:
    """What a Managed release waits for: each chart's readiness so far, and which charts are Existing."""

    ready: dict[Component, bool]
    existing: frozenset[Component]


def _gates(plan: StackPlan, found: Mapping[StackComponent, Presence], scheduler: str) -> _Gates:
    """The charts of Existing components are ready once found; those of Disabled ones are never waited for."""
    ready: dict[Component, bool] = {}
    existing: set[Component] = set()
    for part in plan.parts:
        for chart in charts_of(part.component, scheduler=scheduler):
            if part.mode is Mode.EXISTING:
                ready[chart] = found[part.component].ready
                existing.add(chart)
            elif part.mode is Mode.DISABLED:
                ready[chart] = True
    return _Gates(ready, frozenset(existing))


@dataclass(frozen=True)
class _Releases:
    """The Managed releases as composed: each chart's readiness, why one waits, and ``status.releases``."""

    ready: dict[Component, bool]
    waiting: dict[Component, str]
    status: list[dict[str, Any]]


def _write_releases(ledger: Ledger, stack: str, provider_config: str, plan: StackPlan, gates: _Gates) -> _Releases:
    """Compose each Managed release whose dependencies are ready (or that was composed before), in install order."""
    ready = dict(gates.ready)
    waiting: dict[Component, str] = {}
    status: list[dict[str, Any]] = []
    for install in plan.installs:
        chart = install.chart
        key = release_key(chart.component)
        blocked = [
            f"{d} (Existing)" if d in gates.existing else str(d) for d in chart.depends_on if not ready.get(d, False)
        ]
        if blocked and key not in ledger.req.observed.resources:
            waiting[chart.component] = f"{chart.component} waits for {', '.join(blocked)}"
            ready[chart.component] = False
        else:
            ready[chart.component] = inputs.ready(ledger.req, ledger.rsp, key).true
            ledger.put(key, _release(stack, provider_config, install), ready=ready[chart.component])
        status.append(
            {
                "name": str(chart.component),
                "chart": chart.name,
                "version": install.version,
                "ready": ready[chart.component],
            }
        )
    return _Releases(ready, waiting, sorted(status, key=lambda r: r["name"]))


def _installed(plan: StackPlan, releases: _Releases, gateway: GatewayState, *, serves: bool) -> Condition:
    """Installed: every Managed release Ready and, unless Envoy Gateway is Disabled, the gateway serving."""
    managed = [i.chart.component for i in plan.installs]
    gateway_ok = (gateway.ready and bool(gateway.url)) or not serves
    if all(releases.ready[c] for c in managed) and gateway_ok:
        at = f", gateway at {gateway.url}" if gateway.url else ", no gateway (Envoy Gateway is Disabled)"
        return Condition(Type.INSTALLED, Status.TRUE, Reason.INSTALLED, f"{len(managed)} releases ready{at}")
    if releases.waiting:
        message = "; ".join(releases.waiting[c] for c in sorted(releases.waiting))
        return Condition(Type.INSTALLED, Status.FALSE, Reason.WAITING_FOR_DEPENDENCIES, message)
    pending = [str(c) for c in managed if not releases.ready[c]] + ([] if gateway_ok else ["gateway"])
    return Condition(Type.INSTALLED, Status.FALSE, Reason.INSTALLING, f"not ready yet: {', '.join(pending)}")


FunctionRunner = functools.partial(ComposeRunner, compose)


def _invalid(problems: list[Problem]) -> Condition:
    # The model reads a missing spec as None; anything else names its field.
    missing = [str(p) for p in problems] == ["spec: required"]
    message = describe(problems) if missing else f"the ServingStack is invalid: {describe(problems)}"
    return Condition(Type.INSTALLED, Status.FALSE, Reason.INVALID_SPEC, message)


def _spec_required(xr: ServingStack) -> list[Problem]:
    return [Problem("spec", "required")] if xr.spec is None else []


def _release(stack: str, provider_config: str, install: Install) -> dict[str, Any]:
    chart = install.chart
    source: dict[str, Any] = {"name": chart.name, "repository": install.repository, "version": install.version}
    if install.pull_secret:
        source["pullSecretRef"] = {"name": install.pull_secret}
    for_provider: dict[str, Any] = {"chart": source, "namespace": chart.namespace, "wait": True}
    if install.values:
        for_provider["values"] = dict(install.values)
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
class _CertManager:
    """Whether cert-manager is there to issue the gateway's certificates, and whether it is Disabled."""

    ready: bool
    disabled: bool = False


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
    cert_manager: _CertManager,
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
    chain = secure and (cert_manager.ready or any(k in ledger.req.observed.resources for k in _TLS_KEYS))
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
    waiting = [k for k in _TLS_KEYS if not ready.get(k, False)]
    if secure and not chain and cert_manager.disabled:
        waiting = ["cert-manager, which is Disabled (set spec.gateway.insecure true, or make it Managed or Existing)"]
    condition = _tls_condition(gateway, tls=tls, kept_http=kept_http, waiting=waiting)
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
