"""The InferenceGateway function: install Envoy Gateway on the control plane and compose its Gateway.

It composes a provider-helm Release of Envoy Gateway (through the control
plane's own ProviderConfig; its chart from the table of defaults with ``spec.components`` and
``spec.registry`` over it, ``compose_inference_gateway.charts``), a GatewayClass, a Gateway with an HTTP listener
(and HTTPS when a certificate is given, with the ReferenceGrant that lets the
Gateway read a certificate in another namespace), the caller auth of
``spec.auth`` (``compose_inference_gateway.auth``), the rate-limit counters and
Envoy AI Gateway of ``spec.rateLimit`` and ``spec.aiGateway``
(``compose_inference_gateway.limits``), and reports the Gateway's address once
Envoy Gateway has programmed it.
"""

from __future__ import annotations

import functools
from typing import Any

import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_inference_gateway import auth, limits
from compose_inference_gateway.charts import charts_of
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import parse_or_keep
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import name_of
from modelplane.names import (
    AI_GATEWAY_CRDS_RELEASE_KEY,
    AI_GATEWAY_RELEASE_KEY,
    CERTIFICATE_GRANT_KEY,
    GATEWAY_AUTH_KEY,
    GATEWAY_CLASS_KEY,
    GATEWAY_KEY,
    GATEWAY_RELEASE_KEY,
    KEYS_GRANT_KEY,
    certificate_grant_name,
    gateway_release_name,
)
from modelplane.problems import Problem, describe
from modelplane.readiness import readiness_of
from modelplane.routing import (
    Listener,
    address,
    certificate_grant,
    gateway,
    gateway_class,
    gateway_ref,
    release,
)
from modelplane.routing.gateway import OBSERVED
from modelplane.routing.gateway_values import Extras, envoy_gateway_values
from modelplane_models.inference_gateway import InferenceGateway, Spec

# What says each composed resource is ready: the Release (a managed resource) its Ready condition,
# the GatewayClass Accepted by Envoy Gateway, the Gateway Programmed; a ReferenceGrant has no status.
_READY_WHEN = {
    GATEWAY_RELEASE_KEY: "Ready",
    AI_GATEWAY_CRDS_RELEASE_KEY: "Ready",
    AI_GATEWAY_RELEASE_KEY: "Ready",
    GATEWAY_CLASS_KEY: "Accepted",
    GATEWAY_KEY: "Programmed",
}


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Write the release, class, Gateway (and grant), then status, conditions and readiness."""
    xr = parse_or_keep(ledger, log, InferenceGateway, _invalid)
    if xr is None:
        return
    name = name_of(xr)
    spec = xr.spec or Spec()
    plan = auth.plan_of(spec)
    auth.request_secrets(rsp, plan)
    extras = limits.plan_of(spec)
    limits.request_secret(rsp, extras)
    desired = {**_desired(name, spec, extras), **auth.desired(name, gateway_ref(name), plan)}
    ready = True
    observed_gateway = inputs.observed(req, rsp, GATEWAY_KEY, OBSERVED)
    observed_release = inputs.observed(req, rsp, GATEWAY_RELEASE_KEY, OBSERVED)
    # The Release installs the Gateway API CRDs and creates envoy-gateway-system: before it is
    # Ready the class, Gateway and grant could not be applied (the API server refuses them), and
    # one refused apply stops Crossplane applying the rest. What exists already stays composed.
    installed = observed_release is not None and readiness_of(observed_release, "Ready").true
    for key, manifest in desired.items():
        observed = observed_gateway if key == GATEWAY_KEY else inputs.observed(req, rsp, key, OBSERVED)
        if key != GATEWAY_RELEASE_KEY and not installed and observed is None:
            ready = False
            continue
        is_ready = observed is not None and (key not in _READY_WHEN or readiness_of(observed, _READY_WHEN[key]).true)
        ledger.put(key, manifest, ready=is_ready)
        ready = ready and is_ready
    # A certificate taken out of spec.https takes its ReferenceGrant with it; auth turned off, its policy.
    ledger.remove([CERTIFICATE_GRANT_KEY], "spec.https names no certificate")
    off = "spec.auth is not set" if plan.mode is auth.Mode.UNSET else f"spec.auth.mode is {plan.mode}"
    ledger.remove([GATEWAY_AUTH_KEY], f"{off}: no caller auth")
    ledger.remove([KEYS_GRANT_KEY], "spec.auth.apiKeys names no Secret")
    ledger.remove([AI_GATEWAY_CRDS_RELEASE_KEY, AI_GATEWAY_RELEASE_KEY], "spec.aiGateway is not Enabled")
    ref = gateway_ref(name)
    http_port = spec.http.port if spec.http and spec.http.port else 80
    url = address(observed_gateway, http_port)
    status: dict[str, Any] = {"gateway": {"name": ref.name, "namespace": ref.namespace}}
    if url:
        status["address"] = url
    resource.update(rsp.desired.composite, {"status": status})
    where = f"Gateway {ref.namespace}/{ref.name}"
    if url and readiness_of(observed_gateway, "Programmed").true:
        set_conditions(rsp, Condition(Type.PROGRAMMED, Status.TRUE, Reason.PROGRAMMED, f"{where} serves at {url}"))
    elif not installed and observed_gateway is None:
        release_name = gateway_release_name(name)
        message = f"waiting for the Release {release_name} to install Envoy Gateway before composing {where}"
        set_conditions(rsp, Condition(Type.PROGRAMMED, Status.FALSE, Reason.WAITING_FOR_DEPENDENCIES, message))
    else:
        message = f"waiting for Envoy Gateway to program {where} and give it an address"
        set_conditions(rsp, Condition(Type.PROGRAMMED, Status.FALSE, Reason.WAITING_FOR_ADDRESS, message))
    auth_ready = auth.condition(req, plan)
    set_conditions(rsp, auth_ready)
    if auth_ready.reason == Reason.SECRET_NOT_FOUND:
        response.warning(rsp, auth_ready.message)
        log.info("auth not ready", reason=str(auth_ready.reason), message=auth_ready.message)
    counters = limits.report(rsp, req, extras)
    # A gateway whose key (or Redis certificate) Secrets are missing: not Ready, though all is composed.
    set_ready(
        rsp, ready=ready and url is not None and Reason.SECRET_NOT_FOUND not in (auth_ready.reason, counters.reason)
    )


FunctionRunner = functools.partial(ComposeRunner, compose)


def _invalid(problems: list[Problem]) -> Condition:
    message = f"the InferenceGateway is invalid: {describe(problems)}"
    return Condition(Type.PROGRAMMED, Status.FALSE, Reason.INVALID_SPEC, message)


def _desired(name: str, spec: Spec, extras: Extras) -> dict[str, dict[str, Any]]:
    class_name = spec.gatewayClassName or "modelplane"
    pc = spec.providerConfigRef
    provider_config = {
        "kind": (pc.kind if pc else None) or "ClusterProviderConfig",
        "name": (pc.name if pc else None) or "in-cluster",
    }
    listeners = [Listener((spec.http.port if spec.http else None) or 80)]
    certificate = None
    if spec.https is not None:
        certificate = (spec.https.certificateRef.namespace, spec.https.certificateRef.name)
        listeners.append(Listener(spec.https.port or 443, certificate))
    ref = gateway_ref(name)
    charts = charts_of(spec)
    gateway_values = envoy_gateway_values(extras)
    out = {
        GATEWAY_RELEASE_KEY: release(
            gateway_release_name(name), provider_config, gateway_values, charts.gateway, charts.registry
        ),
        **limits.desired(name, provider_config, extras, charts),
        GATEWAY_CLASS_KEY: gateway_class(class_name),
        GATEWAY_KEY: gateway(ref, class_name, tuple(listeners)),
    }
    grant = certificate_grant(certificate_grant_name(name), ref, certificate) if certificate else None
    if grant is not None:
        out[CERTIFICATE_GRANT_KEY] = grant
    return out
