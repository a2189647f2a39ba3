"""Split each selector's weight over the endpoints it matched (by their shares), as integer backendRef weights."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

# The largest backendRef weight Gateway API accepts.
MAX_WEIGHT = 1_000_000


@dataclass(frozen=True)
class Group:
    """One ``spec.endpoints[]`` entry: its weight and the ready endpoints its selector matched.

    ``shares`` gives an endpoint's own weight within the group (its ``spec.weight``; 1 when absent).
    """

    weight: int
    endpoints: tuple[str, ...]
    shares: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Share:
    """One endpoint's part of the traffic.

    Attributes:
        endpoint: The endpoint's name.
        weight: Its integer backendRef weight.
        fraction: Its exact share of all traffic (0 when nothing has weight).
    """

    endpoint: str
    weight: int
    fraction: Fraction


def split_weights(groups: Sequence[Group]) -> list[Share]:
    """Return each endpoint's weight, sorted by endpoint name.

    A group's weight is split over its endpoints in proportion to their shares (evenly
    when they have none: a pool endpoint's share is its Ready replicas); an endpoint in several
    groups adds up its parts; a group with no endpoints sends nothing (the
    others keep their ratios). The integer weights keep the exact ratios,
    reduced by their greatest common divisor, unless that would exceed
    ``MAX_WEIGHT``: then they are scaled to it and rounded, never rounding a
    positive share down to 0. Every endpoint of every group is listed, with 0
    when its groups weigh 0.
    """
    parts: dict[str, Fraction] = {}
    for group in groups:
        names = sorted(set(group.endpoints))
        shares = {name: max(0, group.shares.get(name, 1)) for name in names}
        whole = sum(shares.values())
        for name in names:
            part = Fraction(group.weight * shares[name], whole) if whole else Fraction(0)
            parts[name] = parts.get(name, Fraction(0)) + part
    total = sum(parts.values(), Fraction(0))
    weights = _integers(parts)
    return [Share(name, weights[name], parts[name] / total if total else Fraction(0)) for name in sorted(parts)]


def _integers(parts: dict[str, Fraction]) -> dict[str, int]:
    positive = [p for p in parts.values() if p > 0]
    if not positive:
        return dict.fromkeys(parts, 0)
    scale = math.lcm(*(p.denominator for p in positive))
    exact = {name: int(p * scale) for name, p in parts.items()}
    divisor = math.gcd(*(w for w in exact.values() if w))
    exact = {name: w // divisor for name, w in exact.items()}
    top = max(exact.values())
    if top <= MAX_WEIGHT:
        return exact
    return {name: max(1, round(Fraction(w * MAX_WEIGHT, top))) if w else 0 for name, w in exact.items()}
