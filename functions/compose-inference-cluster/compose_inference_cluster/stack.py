"""The cluster's ServingStack: the Helm releases and Gateway a workload cluster needs, composed as one XR.

The cluster passes its ``spec.servingStack.components`` and ``spec.registry`` through as
they are, and publishes what the stack reports of its components (``status.components``:
what the fleet scheduler reads to keep replicas off a cluster that lacks what they need),
its ComponentsReady and GatewayTLS conditions, and its anchor (``status.stackResourceRefs``,
``published_stack_refs``: what the ModelReplicas here keep the stack with).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.clusters.usage import UsedRef, published
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.kinds import API_VERSION
from modelplane.layout import Layout
from modelplane.names import SERVING_STACK_KEY
from modelplane.remote import PROVIDER_CONFIG_KIND
from modelplane_models.inference_cluster import Spec

# What the cluster reads of its stack: its Gateway's address, the URL and CA the control plane uses,
# and its components.
_COMPONENT: Layout = {
    "name": str,
    "mode": str,
    "ready": bool,
    "version": str,
    "message": str,
    "neededBy": str,
}
_STACK: Layout = {
    "status": {
        "gateway": {
            "address": str,
            "url": str,
            "tls": {"caSecretRef": {"name": str, "namespace": str}, "hostname": str},
        },
        "components": [_COMPONENT],
    }
}
# The stack's anchor, which the ModelReplicas on the cluster keep with Usages.
_ANCHOR: Layout = {"status": {"anchorRef": {"apiVersion": str, "kind": str, "name": str, "namespace": str}}}
_MODES = frozenset({"Managed", "Existing", "Disabled"})
_NEEDED_BY = frozenset({"All", "MultiNode", "PoolRouting", "None"})


@dataclass(frozen=True)
class StackState:
    """What the cluster publishes of its stack.

    Attributes:
        ready: Whether the ServingStack is Ready.
        gateway: ``status.gateway``.
        tls: The GatewayTLS condition.
        components: ``status.components`` (empty until the stack reports them).
        found: The ComponentsReady condition.
        installed: Why the stack is not Installed, as it says (its Installed message), "" when it is.
    """

    ready: bool
    gateway: dict[str, Any]
    tls: Condition
    components: list[dict[str, Any]]
    found: Condition
    installed: str = ""


def write_stack(ledger: Ledger, name: str, spec: Spec) -> StackState:
    """Compose the ServingStack; return whether it is Ready, its gateway and whether that serves TLS."""
    backend = (spec.serving.backend if spec.serving is not None else None) or "KServe"
    scheduler = (spec.scheduler.type if spec.scheduler is not None else None) or "None"
    prometheus = (spec.observability.prometheus if spec.observability is not None else None) or "None"
    stack_spec: dict[str, Any] = {
        "providerConfigRef": {"name": name, "kind": PROVIDER_CONFIG_KIND},
        "backend": backend,
        "scheduler": {"type": scheduler},
        "prometheus": prometheus,
    }
    insecure = spec.gateway.insecure if spec.gateway is not None else None
    if insecure is not None:
        # Unset stays unset: the stack keeps an HTTP listener composed before only then.
        stack_spec["gateway"] = {"insecure": insecure}
    if spec.servingStack is not None and spec.servingStack.components is not None:
        stack_spec["components"] = spec.servingStack.components.model_dump(exclude_none=True)
    if spec.registry is not None:
        stack_spec["registry"] = spec.registry.model_dump(exclude_none=True)
    stack = {"apiVersion": API_VERSION, "kind": "ServingStack", "metadata": {"name": name}, "spec": stack_spec}
    ready = inputs.ready(ledger.req, ledger.rsp, SERVING_STACK_KEY).true
    ledger.put(SERVING_STACK_KEY, stack, ready=ready)
    observed = inputs.observed(ledger.req, ledger.rsp, SERVING_STACK_KEY, _STACK)
    status = (observed or {}).get("status") or {}
    gateway = dict(status.get("gateway") or {})
    installed = inputs.ready(ledger.req, ledger.rsp, SERVING_STACK_KEY, str(Type.INSTALLED))
    return StackState(
        ready=ready,
        gateway=_published(gateway),
        tls=_tls(ledger, name),
        components=_components(status.get("components")),
        found=_found(ledger, name),
        installed=installed.message if installed.found and installed.status != "True" else "",
    )


def _components(listed: Any) -> list[dict[str, Any]]:  # noqa: ANN401 - as conformed to _COMPONENT
    """The stack's ``status.components``, as the cluster publishes them: each entry that names its component."""
    out = []
    for entry in listed if isinstance(listed, list) else []:
        if not isinstance(entry, dict) or not entry.get("name"):
            continue
        kept = {k: v for k, v in entry.items() if k in _COMPONENT}
        if kept.get("mode") not in _MODES:
            kept.pop("mode", None)
        if kept.get("neededBy") not in _NEEDED_BY:
            kept.pop("neededBy", None)
        out.append(kept)
    return sorted(out, key=lambda e: str(e["name"]))


def _found(ledger: Ledger, name: str) -> Condition:
    """The stack's ComponentsReady condition, as the cluster's."""
    said = inputs.ready(ledger.req, ledger.rsp, SERVING_STACK_KEY, str(Type.COMPONENTS_READY))
    if not said.found:
        message = f"ServingStack {name} has not reported its components yet"
        return Condition(Type.COMPONENTS_READY, Status.FALSE, Reason.CHECKING_COMPONENTS, message)
    status = Status.TRUE if said.status == "True" else Status.FALSE
    known = (Reason.COMPONENTS_READY, Reason.COMPONENT_MISSING, Reason.CHECKING_COMPONENTS)
    reason = Reason(said.reason) if said.reason in known else Reason.CHECKING_COMPONENTS
    return Condition(Type.COMPONENTS_READY, status, reason, said.message)


def _published(gateway: dict[str, Any]) -> dict[str, Any]:
    """The stack's gateway as the cluster publishes it: nothing until it has a URL endpoints may use."""
    url = gateway.get("url")
    if not isinstance(url, str) or not url or not gateway.get("address"):
        return {}
    out = {"address": str(gateway["address"]), "url": url}
    if url.startswith("https://") and isinstance(gateway.get("tls"), dict):
        out["tls"] = gateway["tls"]
    return out


def _tls(ledger: Ledger, name: str) -> Condition:
    """The stack's GatewayTLS condition, as the cluster's (both name the same field, spec.gateway.insecure)."""
    said = inputs.ready(ledger.req, ledger.rsp, SERVING_STACK_KEY, str(Type.GATEWAY_TLS))
    if not said.found:
        return Condition(
            Type.GATEWAY_TLS, Status.FALSE, Reason.TLS_PENDING, f"ServingStack {name} has not reported its TLS yet"
        )
    status = Status.TRUE if said.status == "True" else Status.FALSE
    reason = Reason(said.reason) if said.reason in Reason.__members__.values() else Reason.TLS_PENDING
    return Condition(Type.GATEWAY_TLS, status, reason, said.message)


def published_stack_refs(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> list[dict[str, str]]:
    """``status.stackResourceRefs``: the anchor the ServingStack reports (``status.anchorRef``), once it does.

    Read from the observed stack whatever path the call took (an input it waits for, an invalid spec):
    the replicas' Usages of it are composed from what the cluster publishes.
    """
    observed = inputs.observed(req, rsp, SERVING_STACK_KEY, _ANCHOR) or {}
    ref = UsedRef.of((observed.get("status") or {}).get("anchorRef") or {})
    return published([ref]) if ref is not None else []
