"""The cluster's ServingStack: the Helm releases and Gateway a workload cluster needs, composed as one XR."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.kinds import API_VERSION
from modelplane.layout import Layout
from modelplane.names import SERVING_STACK_KEY
from modelplane.remote import PROVIDER_CONFIG_KIND
from modelplane_models.inference_cluster import Spec

# What the cluster reads of its stack: its Gateway's address, the URL and CA the control plane uses.
_STACK: Layout = {
    "status": {
        "gateway": {
            "address": str,
            "url": str,
            "tls": {"caSecretRef": {"name": str, "namespace": str}, "hostname": str},
        }
    }
}


@dataclass(frozen=True)
class StackState:
    """What the cluster publishes of its stack: readiness, ``status.gateway`` and the GatewayTLS condition."""

    ready: bool
    gateway: dict[str, Any]
    tls: Condition


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
    stack = {"apiVersion": API_VERSION, "kind": "ServingStack", "metadata": {"name": name}, "spec": stack_spec}
    ready = inputs.ready(ledger.req, ledger.rsp, SERVING_STACK_KEY).true
    ledger.put(SERVING_STACK_KEY, stack, ready=ready)
    observed = inputs.observed(ledger.req, ledger.rsp, SERVING_STACK_KEY, _STACK)
    gateway = dict(((observed or {}).get("status") or {}).get("gateway") or {})
    return StackState(ready=ready, gateway=_published(gateway), tls=_tls(ledger, name))


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
