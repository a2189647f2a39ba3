"""The cluster's ServingStack: the Helm releases and Gateway a workload cluster needs, composed as one XR."""

from __future__ import annotations

from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.kinds import API_VERSION
from modelplane.layout import Layout
from modelplane.names import SERVING_STACK_KEY
from modelplane.remote import PROVIDER_CONFIG_KIND
from modelplane_models.inference_cluster import Spec

# What the cluster reads of its stack: the address its Gateway was given.
_STACK: Layout = {"status": {"gateway": {"address": str}}}


def write_stack(ledger: Ledger, name: str, spec: Spec) -> tuple[bool, str]:
    """Compose the ServingStack; return whether it is Ready and the gateway address it reports."""
    backend = (spec.serving.backend if spec.serving is not None else None) or "KServe"
    scheduler = (spec.scheduler.type if spec.scheduler is not None else None) or "None"
    prometheus = (spec.observability.prometheus if spec.observability is not None else None) or "None"
    stack = {
        "apiVersion": API_VERSION,
        "kind": "ServingStack",
        "metadata": {"name": name},
        "spec": {
            "providerConfigRef": {"name": name, "kind": PROVIDER_CONFIG_KIND},
            "backend": backend,
            "scheduler": {"type": scheduler},
            "prometheus": prometheus,
        },
    }
    ready = inputs.ready(ledger.req, ledger.rsp, SERVING_STACK_KEY).true
    ledger.put(SERVING_STACK_KEY, stack, ready=ready)
    observed = inputs.observed(ledger.req, ledger.rsp, SERVING_STACK_KEY, _STACK)
    return ready, str(((observed or {}).get("status", {}).get("gateway") or {}).get("address") or "")
