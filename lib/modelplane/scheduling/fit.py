"""How a replica's roles fit a pool: what a worker strands, what is left, and how options compare.

Pure functions of a pool's free GPUs per node (``modelplane.capacity.NodeFree``) and a
role's footprint, cached by value: a fleet's many pools of one size and use are judged once.
The ``Placer`` (``modelplane.scheduling.placer``) searches with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from modelplane.capacity import NodeFree, PoolKey
from modelplane.scheduling.decision import Score
from modelplane.topology import Footprint


@dataclass(frozen=True)
class Option:
    """The best way one cluster takes one replica.

    Attributes:
        waste: GPUs a first worker of each role would strand on the nodes it takes.
        leftover: GPUs left free on the pools used once the replica is on them.
        pools: Per role, in role order, the pool it takes.
        cost: What the replica costs (or emits) per hour on those pools when a strategy places by it; else None.
    """

    waste: int
    leftover: int
    pools: tuple[PoolKey, ...]
    cost: Decimal | None = None


@lru_cache(maxsize=65536)
def pool_fit(nodes: NodeFree, fp: Footprint) -> tuple[int, int] | None:
    """One role on one pool: the GPUs its first worker strands and the GPUs left, or None if it does not fit.

    A pure function of the pool's histogram: a fleet's many pools of one size and use are judged once.
    """
    if not nodes.fits(fp):
        return None
    return stranded(nodes, fp), nodes.free - fp.total_gpus


def stranded(nodes: NodeFree, fp: Footprint) -> int:
    """GPUs a first worker of ``fp`` strands on the tightest nodes that fit it."""
    g, waste, left = fp.gpus_per_node, 0, fp.nodes_per_worker
    for f in range(g, len(nodes.counts)):
        take = min(nodes.counts[f], left)
        waste += take * (f - g)
        left -= take
        if not left:
            break
    return waste


def as_score(  # noqa: PLR0913 - a score's parts
    spread: int,
    waste: int,
    left: int,
    cluster: str,
    pools: tuple[PoolKey, ...],
    *,
    cost: Decimal | None = None,
    cached: bool | None = None,
) -> Score:
    """The score of an option from its parts (``modelplane.scheduling.decision``: lower wins)."""
    return Score(spread, waste, left, cluster, tuple(key[1] for key in pools), cost, cached)


def score(spread: int, option: Option, cluster: str, *, cached: bool | None = None) -> Score:
    """The score of ``option`` on ``cluster``, which runs ``spread`` of the deployment's replicas already."""
    return as_score(spread, option.waste, option.leftover, cluster, option.pools, cost=option.cost, cached=cached)


UNPRICED = (1, Decimal(0))
"""The rank of an option without the strategy's figure: after every option with one."""


def cost_rank(cost: Decimal | None) -> tuple[int, Decimal]:
    """Sort key of an option's figure: the cheapest first, those without one last."""
    return UNPRICED if cost is None else (0, cost)


def size(fp: Footprint) -> tuple[int, int]:
    """Sort key: larger shapes first (more GPUs per node, then more nodes per worker)."""
    return (-fp.gpus_per_node, -fp.nodes_per_worker)
