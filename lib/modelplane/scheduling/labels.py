"""Kubernetes label selectors (matchLabels and matchExpressions) over cluster labels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from modelplane_models.model_deployment import ClusterSelector


class Operator(StrEnum):
    """A matchExpressions operator."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


@dataclass(frozen=True)
class Requirement:
    """One label requirement."""

    key: str
    operator: Operator
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` meet the requirement (NotIn also matches an absent key, as in Kubernetes)."""
        match self.operator:
            case Operator.IN:
                return self.key in labels and labels[self.key] in self.values
            case Operator.NOT_IN:
                return self.key not in labels or labels[self.key] not in self.values
            case Operator.EXISTS:
                return self.key in labels
            case Operator.DOES_NOT_EXIST:
                return self.key not in labels


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: every requirement must hold; no requirement matches everything."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every requirement."""
        return all(r.matches(labels) for r in self.requirements)


def label_selector(selector: ClusterSelector | None) -> LabelSelector:
    """Parse a ``clusterSelector``; unset or empty selects every cluster."""
    if selector is None:
        return LabelSelector(())
    requirements = [
        Requirement(key, Operator.IN, frozenset({value})) for key, value in sorted((selector.matchLabels or {}).items())
    ]
    requirements += [
        Requirement(e.key, Operator(e.operator), frozenset(v.root for v in e.values or []))
        for e in selector.matchExpressions or []
    ]
    return LabelSelector(tuple(requirements))
