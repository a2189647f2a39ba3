"""Kubernetes label selectors (matchLabels and matchExpressions) over cluster or namespace labels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from modelplane_models.fleet_quota import NamespaceSelector
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


def label_selector(selector: ClusterSelector | NamespaceSelector | None) -> LabelSelector:
    """Parse a ``clusterSelector`` (or a FleetQuota's ``namespaceSelector``); unset or empty selects everything."""
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


def selector_text(match_labels: Mapping[str, str], expressions: Iterable[tuple[str, str, Iterable[str]]]) -> str:
    """A label selector as kubectl prints it: ``env=lab,region in (sa-east-1,sa-west-1),!gpu``; "" for none.

    Args:
        match_labels: ``matchLabels``.
        expressions: ``matchExpressions`` as (key, operator, values).
    """
    parts = [(key, f"{key}={value}") for key, value in match_labels.items()]
    for key, operator, values in expressions:
        listed = ",".join(sorted(set(values)))
        match operator:
            case Operator.IN:
                parts.append((key, f"{key} in ({listed})"))
            case Operator.NOT_IN:
                parts.append((key, f"{key} notin ({listed})"))
            case Operator.EXISTS:
                parts.append((key, key))
            case Operator.DOES_NOT_EXIST:
                parts.append((key, f"!{key}"))
            case _:
                parts.append((key, f"{key} {operator} ({listed})"))
    return ",".join(text for _, text in sorted(parts, key=lambda p: p[0]))


def cluster_selector_text(selector: ClusterSelector | None) -> str:
    """A ``clusterSelector`` as kubectl prints it ("" when it selects every cluster)."""
    if selector is None:
        return ""
    expressions = [(e.key, e.operator, [v.root for v in e.values or []]) for e in selector.matchExpressions or []]
    return selector_text(selector.matchLabels or {}, expressions)
