"""Cost optimality: what CostOptimized placements cost per hour versus the cheapest placement of as many replicas.

On small random fleets whose classes and clusters carry random prices and multipliers, one
deployment (unified, a random shape, sometimes with ``maxReplicasPerCluster``) is scheduled with
``spec.placement.strategy: CostOptimized``. The optimum is found by exhaustive search over every
assignment of its replicas to the eligible pools, with the exact node-level packing check of
``bench.quality`` and the per-cluster limit: the most replicas that fit, and the least their
accelerators cost per hour. The scheduler must place as many, for at most 1% more.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from itertools import combinations_with_replacement
from typing import Any

from bench.quality import ARCH_CEL, CLASSES, ClusterSpec, PoolId, PoolSpec, RoleSpec, fits, random_pools
from modelplane.scheduling import fleet_view, schedule
from modelplane_models.model_deployment import ModelDeployment
from tests.unit.fleet import Pool, Shape, deployment, priced, site

TARGET = 1.0  # percent above the optimum
PRICES = ("0.70", "1.10", "2.40", "4.10")
MULTIPLIERS = (None, None, "0.6", "0.8", "1.2")
CLUSTERS, POOLS, NODES, REPLICAS = (1, 4), (1, 2), (1, 3), (1, 4)


@dataclass(frozen=True)
class CostScene:
    """A priced fleet and one deployment to place on it."""

    clusters: tuple[ClusterSpec, ...]
    prices: dict[str, str]  # class -> perGPUHour
    multipliers: dict[str, str | None]  # cluster -> spec.cost.multiplier
    role: RoleSpec
    replicas: int
    most: int | None  # maxReplicasPerCluster


def scene(seed: int) -> CostScene:
    """A small random priced fleet and deployment, the same for the same seed."""
    rng = random.Random(seed)
    clusters = []
    for i in range(rng.randint(*CLUSTERS)):
        name = f"c{i}"
        pools = random_pools(rng, name, NODES, POOLS)
        clusters.append(ClusterSpec(name, "a", open=True, cordoned=False, pools=pools))
    prices = {c: rng.choice(PRICES) for c in CLASSES}
    multipliers = {c.name: rng.choice(MULTIPLIERS) for c in clusters}
    role = RoleSpec(tensor=rng.choice([1, 2, 4]), pipeline=rng.choice([1, 1, 2]), count=1, arch=None)
    most = rng.choice([None, None, 1, 2])
    return CostScene(tuple(clusters), prices, multipliers, role, rng.randint(*REPLICAS), most)


def _rate(s: CostScene, pool: PoolSpec) -> Decimal:
    """What one replica costs per hour on ``pool``."""
    multiplier = s.multipliers[pool.cluster]
    gpus = s.role.tensor * s.role.pipeline * s.role.count
    return Decimal(s.prices[pool.class_name]) * Decimal(multiplier or 1) * gpus


def optimum(s: CostScene) -> tuple[int, Decimal]:
    """The most replicas that fit, and the least they cost per hour, by exhaustive search."""
    pools = [p for c in s.clusters for p in c.pools if s.role.fits(p)]
    for n in range(s.replicas, 0, -1):
        best: Decimal | None = None
        for chosen in combinations_with_replacement(range(len(pools)), n):
            per_pool = Counter(chosen)
            per_cluster = Counter(pools[i].cluster for i in chosen)
            if s.most is not None and any(k > s.most for k in per_cluster.values()):
                continue
            if not all(fits(pools[i], list(s.role.workers) * k) for i, k in per_pool.items()):
                continue
            cost = sum((_rate(s, pools[i]) for i in chosen), Decimal(0))
            best = cost if best is None or cost < best else best
        if best is not None:
            return n, best
    return 0, Decimal(0)


def _model(s: CostScene) -> ModelDeployment:
    shape = Shape(tensor=s.role.tensor, pipeline=s.role.pipeline, count=s.role.count, cel=ARCH_CEL[None])
    body: dict[str, Any] = deployment("d", replicas=s.replicas, shape=shape).model_dump(exclude_none=True)
    body["spec"]["placement"] = {"strategy": "CostOptimized"}
    if s.most is not None:
        body["spec"]["placement"]["maxReplicasPerCluster"] = s.most
    return ModelDeployment.model_validate(body)


def run(s: CostScene) -> tuple[int, Decimal]:
    """What the scheduler places, and what it costs per hour."""
    classes = [priced(name, s.prices[name], per_node=n, arch=arch) for name, (n, arch) in CLASSES.items()]
    clusters = [
        site(c.name, *(Pool(p.name, p.class_name, p.nodes) for p in c.pools), multiplier=s.multipliers[c.name])
        for c in s.clusters
    ]
    result = schedule(_model(s), fleet_view(clusters, classes))
    pools: dict[PoolId, PoolSpec] = {(p.cluster, p.name): p for c in s.clusters for p in c.pools}
    cost = sum((_rate(s, pools[p.cluster, p.roles[0].pool]) for p in result.placements), Decimal(0))
    return len(result.placements), cost


@dataclass(frozen=True)
class CostQuality:
    """The figures of one cost-optimality run."""

    scenarios: int
    placed: int
    most: int
    cost: Decimal
    optimum: Decimal
    seconds: float

    @property
    def above_percent(self) -> float:
        """How much more the scheduler's placements cost than the optimum, in percent."""
        return float((self.cost - self.optimum) * 100 / self.optimum) if self.optimum else 0.0


def measure(scenarios: int, seed: int = 0) -> CostQuality:
    """Run ``scenarios`` seeded scenarios; each counts only when the scheduler placed the most that fit."""
    start = time.perf_counter()
    placed = most = 0
    cost = best = Decimal(0)
    for i in range(scenarios):
        s = scene(seed + i)
        n, c = run(s)
        m, b = optimum(s)
        placed, most = placed + n, most + m
        cost, best = cost + c, best + b
    return CostQuality(scenarios, placed, most, cost, best, time.perf_counter() - start)


def report(q: CostQuality) -> str:
    """The cost-optimality row, beside its target."""
    verdict = "meets" if q.placed == q.most and q.above_percent <= TARGET else "MISSES"
    return (
        f"  cost-optimal (CostOptimized, {q.scenarios} random priced fleets, {q.seconds:.1f} s): placed {q.placed} of"
        f" the most {q.most}; {q.cost:.2f}/h vs optimum {q.optimum:.2f}/h: {q.above_percent:.2f}% above"
        f" (target <= {TARGET:g}%: {verdict})"
    )
