"""Why a replica went to the cluster it went to: the part of the score that beat the runner-up.

The scheduler scores every cluster that can take a replica (``Score``; lowest
wins) and compares the scores field by field. The first field in which the
winner beats the runner-up (the best of the other clusters) decided; no
runner-up means the winner was the only candidate. ``decide`` names that field
and says it with the figures, for ``status.placements`` and ``preview --explain``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from modelplane.scheduling.costs import Objective


class DecidedBy(StrEnum):
    """The part of the score that placed a replica (``status.placements[].decidedBy``)."""

    ONLY_CANDIDATE = "OnlyCandidate"
    """No other cluster could take it."""
    COST = "Cost"
    """Its accelerators cost less per hour on it than on the runner-up (``CostOptimized``)."""
    CARBON = "Carbon"
    """Its accelerators emit less per hour on it than on the runner-up (``CarbonAware``)."""
    CACHE = "Cache"
    """The deployment's ModelCache has a Ready copy on it, not on the runner-up (``spec.modelCacheRef``)."""
    SPREAD = "Spread"
    """Fewer replicas of the deployment on it than on the runner-up."""
    BEST_FIT = "BestFit"
    """Fewer GPUs stranded on the nodes taken, or else fewer GPUs left free, than on the runner-up."""
    TIE_BREAK = "TieBreak"
    """A score equal to the runner-up's: the cluster first by name."""


@dataclass(frozen=True, order=True)
class Score:
    """One cluster's score for a replica; lower wins, compared in field order.

    Attributes:
        spread: Replicas of the deployment already on the cluster.
        stranded: GPUs a worker of each role leaves idle on the nodes it takes (best fit).
        left: GPUs free on the pools used once the replica is there.
        cluster: The cluster's name (ties).
        pools: The cluster's pools the replica takes, per role.
        cost: What the replica costs (or emits) per hour there, when a strategy places by it (ranked first,
            a cluster without the figure after every cluster with it); None otherwise or without the figure.
        cached: Whether the deployment's ModelCache has a Ready copy there (ranked after the cost, before
            spread); None when the deployment references no cache.
    """

    spread: int
    stranded: int
    left: int
    cluster: str
    pools: tuple[str, ...]
    cost: Decimal | None = None
    cached: bool | None = None


def cache_rank(score: Score) -> int:
    """Sort key of a score's copy of the cache: Ready first (no cache referenced: all equal)."""
    return 0 if score.cached or score.cached is None else 1


@dataclass(frozen=True)
class Decision:
    """Why a replica went where it went: the deciding part of the score and a short message with the figures."""

    decided_by: DecidedBy
    message: str


def decide(  # noqa: PLR0911 - one return per part of the score, in the score's order
    winner: Score, runner_up: Score | None, objective: Objective | None = None
) -> Decision:
    """Name the part of ``winner``'s score that beat ``runner_up`` (None: no other cluster could take the replica).

    With an ``objective`` (``CostOptimized``, ``CarbonAware``) its figure is compared first, then
    whether the deployment's ModelCache has a Ready copy on the cluster (when it references one).
    The message names one cluster at most (the runner-up), so its length stays bounded by a name's.
    """
    if runner_up is None:
        return Decision(DecidedBy.ONLY_CANDIDATE, "only candidate: no other cluster can take it now")
    other = runner_up.cluster
    if objective is not None and winner.cost != runner_up.cost:
        word = "carbon" if objective.decided_by is DecidedBy.CARBON else "cost"
        return Decision(
            objective.decided_by,
            f"{word}: {objective.say(winner.cost)} here vs {objective.say(runner_up.cost)} on {other} (runner-up)",
        )
    if winner.cached is not None and winner.cached != runner_up.cached:
        return Decision(DecidedBy.CACHE, f"cache: the model's copy is Ready here, not on {other} (runner-up)")
    if winner.spread != runner_up.spread:
        return Decision(
            DecidedBy.SPREAD,
            f"spread: {_count(winner.spread, 'replica')} here vs {runner_up.spread} on {other} (runner-up)",
        )
    if winner.stranded != runner_up.stranded:
        return Decision(
            DecidedBy.BEST_FIT,
            f"best fit: strands {_count(winner.stranded, 'GPU')}, leaves {winner.left} free"
            f" vs {runner_up.stranded} stranded on {other}",
        )
    if winner.left != runner_up.left:
        return Decision(
            DecidedBy.BEST_FIT,
            f"best fit: strands {_count(winner.stranded, 'GPU')}, leaves {winner.left} free"
            f" vs {runner_up.left} free on {other}",
        )
    return Decision(DecidedBy.TIE_BREAK, f"tie-break: equal score with {other}, first by name")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
