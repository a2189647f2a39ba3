"""Judge one injected fault: what compose-model-deployment dropped, changed silently, and reported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crossplane.function import resource

from modelplane.names import replica_key, replica_key_ordinal, usage_key, usage_key_ordinal
from tests.faults.faults import Injection

_KINDS = ("replica-", "endpoint-")


@dataclass(frozen=True)
class Verdict:
    """What one run did wrong ("" or empty when nothing).

    Attributes:
        dropped: Observed replicas and endpoints missing from the desired state without a user reason,
            Usages missing while their replica stays, and a desired replica without a Usage of its cluster's
            ServingStack anchor (``stack_unkept``).
        changed: Observed replicas and endpoints whose spec the run rewrote (what runs must not change).
        silent: Why the run did not report a fault it must report ("" when it did, or need not).
        extra: Anything else the fault's own rule requires and the run did not do.
    """

    dropped: tuple[str, ...]
    changed: tuple[str, ...]
    silent: str
    extra: str

    @property
    def ok(self) -> bool:
        return not (self.dropped or self.changed or self.silent or self.extra)

    def describe(self) -> str:
        parts = [f"dropped {', '.join(self.dropped)}" if self.dropped else "", self.silent, self.extra]
        if self.changed:
            parts.append(f"changed {', '.join(self.changed)}")
        return "; ".join(p for p in parts if p)


def _plain(value: Any) -> Any:
    """``value`` as it reads back from a protobuf Struct (every number a float)."""
    return resource.struct_to_dict(resource.dict_to_struct({"v": value}))["v"]


def judge(injection: Injection, got: dict[str, Any]) -> Verdict:
    """Judge the response ``got`` to ``injection``'s request."""
    observed = injection.call.observed
    desired = {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}
    kept = [k for k in sorted(observed) if k.startswith(_KINDS) and k not in injection.removes]
    dropped = (
        tuple(k for k in kept if k not in desired)
        + _usages_dropped(observed, desired)
        + stack_unkept(injection.call.required.get("clusters", []), desired)
    )
    changed = tuple(
        k for k in kept if k in desired and _plain(desired[k].get("spec")) != _plain(observed[k].get("spec"))
    )
    return Verdict(dropped, changed, _silent(injection, got), _extra(injection, got, desired))


def _usages_dropped(observed: dict[str, Any], desired: dict[str, Any]) -> tuple[str, ...]:
    """Usages gone while their replica stays: the cloud object they keep would be exposed (it must go with it)."""
    return tuple(
        k
        for k in sorted(observed)
        if (ordinal := usage_key_ordinal(k)) is not None and replica_key(ordinal) in desired and k not in desired
    )


def stack_unkept(clusters: list[dict[str, Any]], desired: dict[str, Any]) -> tuple[str, ...]:
    """Each desired replica's missing Usage of its cluster's ServingStack anchor (``status.stackResourceRefs``).

    Without it, deleting the cluster uninstalls the stack (the workload gateway, KServe) under a replica
    still serving there: a drop, whether the Usage was composed before or never was. Written here from
    what the cluster publishes and the Usage's composition key, not from the function's own code.
    """
    published = {
        str(c.get("metadata", {}).get("name", "")): (c.get("status") or {}).get("stackResourceRefs") or []
        for c in clusters
        if isinstance(c, dict)
    }
    out = []
    for key in sorted(desired):
        ordinal, body = replica_key_ordinal(key), desired[key]
        if ordinal is None or body.get("kind") != "ModelReplica":
            continue
        name = body.get("metadata", {}).get("name", "")
        cluster = ((body.get("spec") or {}).get("inferenceClusterRef") or {}).get("name", "")
        for ref in published.get(cluster, []):
            usage = desired.get(usage_key(ordinal, str(ref.get("kind", "")), str(ref.get("name", ""))), {})
            spec = usage.get("spec", {})
            of = spec.get("of", {}).get("resourceRef", {})
            by = spec.get("by", {}).get("resourceRef", {})
            if of != {"name": ref.get("name"), "namespace": ref.get("namespace")} or by != {"name": name}:
                out.append(f"Usage of {ref.get('kind')} {ref.get('name')} by {name} (on {cluster})")
    return tuple(out)


def _silent(injection: Injection, got: dict[str, Any]) -> str:
    if not injection.names:
        return ""
    if injection.progress:
        said = [r.get("message", "") for r in got.get("results", [])]
        return "" if any(injection.names in m for m in said) else f"no result names {injection.names!r}"
    scheduled = next((c for c in got.get("conditions", []) if c.get("type") == "Scheduled"), None)
    if scheduled is None or scheduled.get("status") == "STATUS_CONDITION_TRUE":
        return "Scheduled is not False"
    if injection.reasons and scheduled.get("reason") not in injection.reasons:
        return f"Scheduled's reason is {scheduled.get('reason')}, not {' or '.join(sorted(injection.reasons))}"
    warnings = [r.get("message", "") for r in got.get("results", []) if r.get("severity") == "SEVERITY_WARNING"]
    if not any(injection.names in w for w in warnings):
        return f"no warning names {injection.names!r}"
    return ""


def _extra(injection: Injection, got: dict[str, Any], desired: dict[str, dict[str, Any]]) -> str:
    if injection.unready is None:
        return ""
    key = f"endpoint-{injection.unready}"
    problems = []
    if key in injection.call.observed:
        annotations = desired.get(key, {}).get("metadata", {}).get("annotations", {})
        if annotations.get("modelplane.ai/serving") != "false":
            problems.append(f"{key} is not marked as not serving")
        if got["desired"]["resources"].get(key, {}).get("ready") == "READY_TRUE":
            problems.append(f"{key} is composed Ready")
    if got.get("desired", {}).get("composite", {}).get("ready") == "READY_TRUE":
        problems.append("the deployment is Ready with a replica that does not serve")
    return "; ".join(problems)
