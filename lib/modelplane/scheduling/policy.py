"""A ModelDeployment's ``spec.placement``: how new replicas are spread, and which go first on a scale-down."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from modelplane_models.model_deployment import Spec


class PlacementStrategy(StrEnum):
    """``spec.placement.strategy``: what a new replica's cluster is chosen by first."""

    SPREAD = "Spread"
    """The fewest replicas of the deployment, then the best fit (the default)."""
    COST_OPTIMIZED = "CostOptimized"
    """The lowest price per hour of the replica's accelerators, then as Spread."""
    CARBON_AWARE = "CarbonAware"
    """The lowest emissions per hour of the replica's accelerators, then as Spread."""


@dataclass(frozen=True)
class Policy:
    """How a deployment's replicas are spread over the clusters its selector admits.

    Attributes:
        strategy: ``spec.placement.strategy``.
        max_per_cluster: ``spec.placement.maxReplicasPerCluster``: the most replicas one cluster takes (None: no limit).
        pinned: ``spec.placement.pinnedClusters``: clusters that keep their last Ready replica through a scale-down.
    """

    strategy: PlacementStrategy = PlacementStrategy.SPREAD
    max_per_cluster: int | None = None
    pinned: frozenset[str] = frozenset()


def policy_of(spec: Spec) -> Policy:
    """The placement policy of a ModelDeployment's ``spec`` (the defaults when ``spec.placement`` is unset)."""
    placement = spec.placement
    if placement is None:
        return Policy()
    strategy = PlacementStrategy(placement.strategy) if placement.strategy else PlacementStrategy.SPREAD
    most = placement.maxReplicasPerCluster
    pinned = frozenset(c.root for c in placement.pinnedClusters or ())
    return Policy(strategy, most if most is not None and most > 0 else None, pinned)
