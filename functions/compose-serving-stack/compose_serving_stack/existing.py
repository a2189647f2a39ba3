"""Components the stack does not install: Existing ones checked through Observe-only Objects, and hand-overs.

An Existing component's probes (``modelplane.stack.components.probes``) each ride in an
Observe-only provider-kubernetes Object: Crossplane reads the remote object and never
creates, changes or deletes it. A component that was Managed and is now Existing or
Disabled keeps what it installed: its Release is first made Observe-only, then (once
that is applied) left out, so deleting it leaves the Helm release on the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf import struct_pb2 as structpb

from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.names import CONTROL_PLANE_NAMESPACE, bounded_name, is_probe_key, probe_key, release_key
from modelplane.remote import Readiness, ReadinessRule, wrap
from modelplane.stack.components import Mode, StackComponent, charts_of
from modelplane.stack.plan import StackPlan
from modelplane.stack.presence import OBSERVED, Presence, finding, presence

# A probe never gates readiness: the stack reads what it found and says so (ComponentsReady).
_OBSERVE = ReadinessRule(Readiness.SUCCESSFUL_CREATE)
_OBSERVE_ONLY = ["Observe"]
_RELEASE_POLICIES = {"spec": {"managementPolicies": [str]}}


def write_probes(ledger: Ledger, stack: str, provider_config: str, plan: StackPlan) -> dict[StackComponent, Presence]:
    """Compose each Existing component's probes; return what they found, by component."""
    found: dict[StackComponent, Presence] = {}
    for part in plan.parts:
        if part.mode is not Mode.EXISTING:
            continue
        findings = []
        for probe in part.probes:
            key = probe_key(str(part.component), probe.slug)
            obj = wrap(
                probe.manifest(),
                name=bounded_name(f"{stack}-{str(part.component).lower()}-{probe.slug}", 253),
                namespace=CONTROL_PLANE_NAMESPACE,
                provider_config=provider_config,
                readiness=_OBSERVE,
                observe_only=True,
            )
            ledger.put(key, obj, ready=True)
            findings.append(finding(probe, inputs.observed(ledger.req, ledger.rsp, key, OBSERVED)))
        found[part.component] = presence(findings)
    ledger.remove_unwritten(is_probe_key, lambda key: f"{key}: its component is not Existing any more")
    return found


def hand_over(ledger: Ledger, plan: StackPlan, scheduler: str) -> list[str]:
    """Keep the Releases of components no longer Managed, Observe-only first, then leave them out; return their keys.

    Deleting a Release uninstalls its chart unless Delete is not among its management policies:
    Crossplane then leaves the Helm release where it is. So a Release observed with Delete still
    allowed is kept, Observe-only; one observed Observe-only already is left out.
    """
    handed: list[str] = []
    for part in plan.parts:
        if part.mode is Mode.MANAGED:
            continue
        for chart in charts_of(part.component, scheduler=scheduler):
            key = release_key(str(chart))
            if key not in ledger.req.observed.resources:
                continue
            handed.append(key)
            why = f"{part.component} is {part.mode}: Modelplane no longer manages {chart} and leaves it installed"
            if _observe_only(ledger, key):
                ledger.remove([key], why)
                continue
            ledger.keep([key], why)
            spec = ledger.rsp.desired.resources[key].resource.fields["spec"].struct_value
            spec.fields["managementPolicies"].list_value.CopyFrom(_list(_OBSERVE_ONLY))
            ledger.mark(key, ready=True)
    return handed


def _observe_only(ledger: Ledger, key: str) -> bool:
    observed = inputs.observed(ledger.req, ledger.rsp, key, _RELEASE_POLICIES) or {}
    policies = (observed.get("spec") or {}).get("managementPolicies")
    return isinstance(policies, list) and bool(policies) and "Delete" not in policies and "*" not in policies


def _list(values: Iterable[str]) -> structpb.ListValue:
    out = structpb.ListValue()
    out.extend(list(values))
    return out
