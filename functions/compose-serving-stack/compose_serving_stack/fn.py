"""The ServingStack function: the Helm releases a workload cluster needs, dependencies first, and its Gateway.

Each component is a provider-helm ``Release`` of a chart pinned in
``modelplane.charts``, composed only once every component it depends on
reports Ready (a Release composed before stays composed). Once Envoy Gateway
is Ready, the GatewayClass and the workload Gateway follow as
provider-kubernetes Objects; the Gateway's address, as the Object observes it,
becomes ``status.gateway.address``.
"""

from __future__ import annotations

import functools
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
    GATEWAY_CLASS_KEY,
    GATEWAY_KEY,
    GATEWAY_NAMESPACE_KEY,
    WORKLOAD_GATEWAY_NAME,
    WORKLOAD_GATEWAY_NAMESPACE,
    bounded_name,
    helm_release_name,
    is_release_key,
    release_key,
)
from modelplane.problems import Problem, describe
from modelplane.remote import Readiness, ReadinessRule, observed_manifest, readiness_for, wrap
from modelplane_models.serving_stack import Gateway, ServingStack

RELEASE_API_VERSION = "helm.m.crossplane.io/v1beta1"
ENVOY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
# What the stack reads of the Object carrying its Gateway: the addresses Envoy Gateway gave it.
_OBSERVED_GATEWAY: Layout = {"status": {"atProvider": {"manifest": {"status": {"addresses": [{"value": str}]}}}}}
_PROGRAMMED = ReadinessRule(
    Readiness.DERIVE_FROM_CEL_QUERY,
    "object.status.conditions.exists(c, c.type == 'Programmed' && c.status == 'True')",
)
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
    gateway_ready, address = _write_gateway(
        ledger, name, provider_config, spec.gateway or Gateway(), envoy_ready=ready[Component.ENVOY_GATEWAY]
    )
    if not ready[Component.ENVOY_GATEWAY] and not _gateway_composed(req):
        waiting.append("the Gateway waits for envoy-gateway")
    status: dict[str, Any] = {"releases": sorted(releases, key=lambda r: r["name"])}
    if address:
        status["gateway"] = {"address": address}
    resource.update(rsp.desired.composite, {"status": status})
    installed = all(ready.values()) and gateway_ready and bool(address)
    if installed:
        condition = Condition(
            Type.INSTALLED, Status.TRUE, Reason.INSTALLED, f"{len(charts)} releases ready, gateway at {address}"
        )
    elif waiting:
        condition = Condition(Type.INSTALLED, Status.FALSE, Reason.WAITING_FOR_DEPENDENCIES, "; ".join(waiting))
    else:
        pending = [str(c) for c, r in ready.items() if not r] + ([] if gateway_ready and address else ["gateway"])
        condition = Condition(Type.INSTALLED, Status.FALSE, Reason.INSTALLING, f"not ready yet: {', '.join(pending)}")
    set_conditions(rsp, condition)
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


def _write_gateway(
    ledger: Ledger,
    stack: str,
    provider_config: str,
    gateway: Gateway,
    *,
    envoy_ready: bool,
) -> tuple[bool, str]:
    """Compose the GatewayClass and Gateway once Envoy Gateway is Ready; return the Gateway's readiness and address."""
    if not envoy_ready and not _gateway_composed(ledger.req):
        return False, ""
    class_name = gateway.gatewayClassName or "modelplane"
    manifests = {
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
                "spec": {
                    "gatewayClassName": class_name,
                    "listeners": [
                        {
                            "name": "http",
                            "protocol": "HTTP",
                            "port": gateway.port or 80,
                            "allowedRoutes": {"namespaces": {"from": "All"}},
                        }
                    ],
                },
            },
            _PROGRAMMED,
        ),
    }
    ready = True
    for key, (manifest, readiness) in manifests.items():
        obj = wrap(
            manifest,
            name=bounded_name(f"{stack}-{key}", 253),
            namespace=CONTROL_PLANE_NAMESPACE,
            provider_config=provider_config,
            readiness=readiness,
        )
        observed = inputs.ready(ledger.req, ledger.rsp, key).true
        ledger.put(key, obj, ready=observed)
        ready = ready and observed
    return ready, _address(ledger.req, ledger.rsp)


def _gateway_composed(req: fnv1.RunFunctionRequest) -> bool:
    """Whether any of the Gateway's objects was composed before (then all of them stay composed)."""
    return any(k in req.observed.resources for k in (GATEWAY_NAMESPACE_KEY, GATEWAY_CLASS_KEY, GATEWAY_KEY))


def _address(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> str:
    """The Gateway's first address, as provider-kubernetes observed the Gateway."""
    observed = inputs.observed(req, rsp, GATEWAY_KEY, _OBSERVED_GATEWAY)
    manifest = observed_manifest(observed) if observed is not None else None
    addresses = ((manifest or {}).get("status") or {}).get("addresses") or []
    return str(addresses[0].get("value") or "") if addresses else ""
