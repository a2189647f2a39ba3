"""Whether an Existing component is there: its probes as their Observe-only Objects report them.

provider-kubernetes copies an observed object into ``status.atProvider.manifest``. An
Object whose remote object does not exist has no manifest and a ``Synced`` condition
that is False (the observe failed); one not reconciled yet has neither. So each probe
is found, missing, or not checked yet; a controller's Deployment is found only once its
``Available`` condition is True.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from modelplane.layout import CONDITION, Layout
from modelplane.stack.components import Probe

# What is read of a probe's Object: its conditions and the observed object's conditions.
OBSERVED: Layout = {
    "status": {
        "conditions": [CONDITION],
        "atProvider": {"manifest": {"kind": str, "status": {"conditions": [CONDITION]}}},
    }
}


class Seen(StrEnum):
    """A probe's verdict."""

    FOUND = "Found"
    MISSING = "Missing"
    UNAVAILABLE = "Unavailable"  # a controller's Deployment that exists but is not Available
    UNCHECKED = "Unchecked"  # its Object has not been observed yet


@dataclass(frozen=True)
class Finding:
    """What a probe found, and how a message says it."""

    probe: Probe
    seen: Seen

    def __str__(self) -> str:
        """E.g. ``CustomResourceDefinition clusterqueues.kueue.x-k8s.io not found``."""
        said = {
            Seen.FOUND: "found",
            Seen.MISSING: "not found",
            Seen.UNAVAILABLE: "not Available",
            Seen.UNCHECKED: "not checked yet",
        }
        return f"{self.probe} {said[self.seen]}"


def _condition(conditions: Any, kind: str) -> Mapping[str, Any] | None:  # noqa: ANN401 - as read
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def finding(probe: Probe, observed: Mapping[str, Any] | None) -> Finding:
    """What ``probe`` found, from its Object as observed (conformed to ``OBSERVED``); None: not observed."""
    status = (observed or {}).get("status") or {}
    manifest = (status.get("atProvider") or {}).get("manifest")
    if isinstance(manifest, Mapping) and manifest:
        if not probe.controller:
            return Finding(probe, Seen.FOUND)
        available = _condition((manifest.get("status") or {}).get("conditions"), "Available")
        ok = available is not None and available.get("status") == "True"
        return Finding(probe, Seen.FOUND if ok else Seen.UNAVAILABLE)
    synced = _condition(status.get("conditions"), "Synced")
    if synced is not None and synced.get("status") == "False":
        return Finding(probe, Seen.MISSING)
    return Finding(probe, Seen.UNCHECKED)


@dataclass(frozen=True)
class Presence:
    """An Existing component's findings: it is there when every probe found it."""

    findings: tuple[Finding, ...]

    @property
    def ready(self) -> bool:
        """Whether every probe found what it looks for."""
        return all(f.seen is Seen.FOUND for f in self.findings)

    @property
    def checked(self) -> bool:
        """Whether every probe has been observed at least once."""
        return all(f.seen is not Seen.UNCHECKED for f in self.findings)

    def problems(self) -> str:
        """What is missing, not Available or not checked yet, in probe order; "" when ready."""
        return "; ".join(str(f) for f in self.findings if f.seen is not Seen.FOUND)


def presence(findings: Iterable[Finding]) -> Presence:
    """The presence of a component from its probes' findings."""
    return Presence(tuple(findings))
