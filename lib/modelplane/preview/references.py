"""References that resolve to nothing: a pool's InferenceClass, a ModelService's endpoint selectors.

The API server accepts both (a reference is a string, a selector a map), and the control plane
waits: a pool without its class offers no GPUs, a selector that matches nothing routes nowhere.
Each is said once, against the object and field that name it, with the name likely meant.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.names import DEPLOYMENT_LABEL
from modelplane.preview.hints import nearest
from modelplane.scheduling.labels import LabelSelector, Operator, Requirement, selector_text

Labels = Mapping[str, str]


def missing_class(pool: str, index: int, class_name: str, known: Iterable[str]) -> str:
    """What a pool naming a class that is not among the manifests says, with the class likely meant."""
    near = nearest(class_name, known)
    meant = f" (did you mean {near}?)" if near is not None else ""
    return (
        f"pool {pool}: spec.nodePools[{index}].className: InferenceClass {class_name} not found{meant}; "
        f"the pool offers no GPUs to place replicas on"
    )


def _selector(raw: Mapping[str, Any]) -> tuple[LabelSelector, str]:
    labels = {str(k): str(v) for k, v in (raw.get("matchLabels") or {}).items()}
    expressions = [
        (str(e.get("key", "")), str(e.get("operator", "")), [str(v) for v in e.get("values") or []])
        for e in raw.get("matchExpressions") or []
        if isinstance(e, Mapping)
    ]
    requirements = [Requirement(k, Operator.IN, frozenset({v})) for k, v in sorted(labels.items())]
    requirements += [
        Requirement(k, Operator(op), frozenset(values)) for k, op, values in expressions if op in set(Operator)
    ]
    return LabelSelector(tuple(requirements)), selector_text(labels, expressions)


def _meant(raw: Mapping[str, Any], candidates: Sequence[Labels]) -> list[str]:
    """For each matchLabels entry no candidate has, the key or value near it that one has."""
    hints = []
    keys = {k for labels in candidates for k in labels}
    for key, value in sorted((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items()):
        if key not in keys:
            near_key = nearest(key, keys)
            if near_key is not None:
                hints.append(f"{near_key}={value}")
            continue
        values = {labels[key] for labels in candidates if key in labels}
        near = nearest(value, values)
        if near is not None:
            hints.append(f"{key}={near}")
    return hints


@dataclass(frozen=True)
class Selectable:
    """The label sets a namespace's ModelService selectors can match, each once, indexed by label."""

    labels: tuple[Labels, ...]
    by_label: Mapping[tuple[str, str], tuple[Labels, ...]]

    def matched(self, selector: LabelSelector, match_labels: Mapping[str, str]) -> bool:
        """Whether ``selector`` (whose ``matchLabels`` are given) matches any of the label sets."""
        if match_labels:
            # Only the sets holding one of its labels can match: look there (a fleet has many services).
            pair = min(match_labels.items(), key=lambda kv: len(self.by_label.get(kv, ())))
            return any(selector.matches(labels) for labels in self.by_label.get(pair, ()))
        return any(selector.matches(labels) for labels in self.labels)


def selectable(endpoints: Iterable[Labels], deployments: Iterable[str]) -> Selectable:
    """What a namespace's selectors can match.

    Args:
        endpoints: The labels of every ModelEndpoint in the namespace.
        deployments: The names of its ModelDeployments, whose endpoints carry
            ``modelplane.ai/deployment: <name>`` once their replicas serve.
    """
    unique = {tuple(sorted(labels.items())): labels for labels in endpoints}
    unique |= {((DEPLOYMENT_LABEL, name),): {DEPLOYMENT_LABEL: name} for name in deployments}
    by_label: dict[tuple[str, str], list[Labels]] = {}
    for items, labels in sorted(unique.items()):
        for pair in items:
            by_label.setdefault(pair, []).append(labels)
    ordered = tuple(labels for _, labels in sorted(unique.items()))
    return Selectable(ordered, {k: tuple(v) for k, v in by_label.items()})


def unmatched_selectors(service: Mapping[str, Any], candidates: Selectable) -> tuple[str, ...]:
    """Each ``spec.endpoints[]`` selector of ``service`` that matches nothing its namespace has or will have."""
    namespace = str(service.get("metadata", {}).get("namespace", ""))
    out = []
    for index, entry in enumerate(service.get("spec", {}).get("endpoints") or []):
        raw = entry.get("selector") if isinstance(entry, Mapping) else None
        if not isinstance(raw, Mapping):
            continue
        selector, text = _selector(raw)
        match_labels = {str(k): str(v) for k, v in (raw.get("matchLabels") or {}).items()}
        if candidates.matched(selector, match_labels):
            continue
        meant = _meant(raw, candidates.labels)
        hint = f"; did you mean {' or '.join(meant)}?" if meant else ""
        out.append(
            f"spec.endpoints[{index}].selector ({text}) matches no ModelEndpoint, and no ModelDeployment "
            f"in {namespace or 'its namespace'} composes one it would match{hint}"
        )
    return tuple(out)
