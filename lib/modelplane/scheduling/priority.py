"""A ModelDeployment's priority: the value of the FleetPriorityClass ``spec.priority`` names, if its quotas allow it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from modelplane.scheduling.quotas import Quota, Quotas, applying


@dataclass(frozen=True)
class Priority:
    """A deployment's priority: its class's name ("" for none) and value (0 for none)."""

    name: str = ""
    value: int = 0


NO_PRIORITY = Priority()


class PriorityReason(StrEnum):
    """Why ``spec.priority`` cannot be used."""

    NOT_FOUND = "PriorityClassNotFound"
    NOT_ALLOWED = "PriorityNotAllowed"


@dataclass(frozen=True)
class PriorityProblem:
    """Why ``spec.priority`` cannot be used, with a message naming the field."""

    reason: PriorityReason
    message: str


def resolve_priority(name: str, classes: Mapping[str, int], quotas: Iterable[Quota]) -> Priority | PriorityProblem:
    """The priority ``spec.priority`` names, or why it cannot be used.

    Args:
        name: ``spec.priority`` ("" when unset: the value 0, always allowed).
        classes: Every FleetPriorityClass's value, by name.
        quotas: The FleetQuotas that apply to the deployment's namespace: each must allow the class.
    """
    if not name:
        return NO_PRIORITY
    if name not in classes:
        return PriorityProblem(PriorityReason.NOT_FOUND, f"spec.priority: FleetPriorityClass {name} not found")
    for quota in sorted(quotas, key=lambda q: q.name):
        if quota.allowed is None or name in quota.allowed:
            continue
        allowed = ", ".join(sorted(quota.allowed))
        says = f"allows only priority classes {allowed}" if allowed else "allows no priority class"
        message = f"spec.priority: FleetQuota {quota.name} {says}, not {name}"
        return PriorityProblem(PriorityReason.NOT_ALLOWED, message)
    return Priority(name, classes[name])


def answer_to(
    quotas: Iterable[Quota], classes: Mapping[str, int], namespace: str, name: str
) -> tuple[Quotas, Priority | PriorityProblem]:
    """The FleetQuotas ``namespace`` answers to, and what ``name`` (``spec.priority``) resolves to.

    A priority that cannot be used counts as 0 in the ``Quotas``: the scheduler places nothing then
    (the deployment's ``Scheduled`` says why), and ``--explain`` still shows what the quotas allow.
    """
    found = applying(quotas, namespace)
    resolved = resolve_priority(name, classes, found)
    return Quotas(found, resolved.value if isinstance(resolved, Priority) else 0), resolved
