"""Placement quality: replicas the scheduler places versus the most any placement could.

On small random fleets, deployments are scheduled one after another, each
seeing the replicas of those before it (as the function would compose them)
through what each cluster publishes of them (``modelplane.scheduling.fleet_view``
summarizes every cluster as its function would).
Two optima are found by exhaustive search over every assignment of replicas to
clusters and pools, with an exact node-level packing check:

- per step: the most replicas of each deployment that fit beside the replicas
  already placed (which may be repacked on their pools' nodes: the scheduler
  knows what a replica holds, not which nodes it is on). This is the quality of
  each decision the scheduler makes;
- per sequence: the most replicas of all the deployments together, in any
  order. An online scheduler that spreads each deployment over clusters for
  availability can leave less than this; it is printed for reference.

Eligibility (selector, node selector, topology, cordoned and not-Ready
clusters) is decided here independently of the scheduler, from how the fleet
was generated.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import combinations_with_replacement

from modelplane.scheduling import fleet_view, schedule
from modelplane_models.model_replica import ModelReplica
from tests.unit.fleet import Pool, Shape, cluster, deployment, gpu_class, replicas_of

# name -> (GPUs per node, architecture)
CLASSES = {"h100": (8, "Hopper"), "a100": (4, "Ampere"), "l4": (2, "Ada")}
ARCH_CEL = {
    "Hopper": 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
    "Ampere": 'device.attributes["gpu.nvidia.com"].architecture == "Ampere"',
    None: 'device.driver == "gpu.nvidia.com"',
}
TARGET = 99.0
CLUSTERS, POOLS, NODES, DEPLOYMENTS, REPLICAS = (1, 3), (1, 2), (1, 4), (2, 5), (1, 3)

Worker = tuple[int, int]
"""A worker as (GPUs on each of its nodes, nodes)."""
PoolId = tuple[str, str]


@dataclass(frozen=True)
class PoolSpec:
    """One pool of a generated cluster."""

    cluster: str
    name: str
    class_name: str
    nodes: int

    @property
    def per_node(self) -> int:
        """GPUs per node."""
        return CLASSES[self.class_name][0]

    @property
    def arch(self) -> str:
        """The GPUs' architecture."""
        return CLASSES[self.class_name][1]


@dataclass(frozen=True)
class ClusterSpec:
    """One generated cluster."""

    name: str
    region: str
    open: bool  # Ready and not cordoned
    cordoned: bool
    pools: tuple[PoolSpec, ...]


@dataclass(frozen=True)
class RoleSpec:
    """One role of a generated deployment."""

    tensor: int
    pipeline: int
    count: int
    arch: str | None

    @property
    def workers(self) -> tuple[Worker, ...]:
        """The role's workers."""
        return ((self.tensor, self.pipeline),) * self.count

    def fits(self, pool: PoolSpec) -> bool:
        """Whether the role may run on ``pool`` (node selector and topology)."""
        return (self.arch is None or self.arch == pool.arch) and self.tensor <= pool.per_node


@dataclass(frozen=True)
class DeploymentSpec:
    """One generated deployment: one role (unified) or two (prefill, decode)."""

    name: str
    replicas: int
    region: str | None
    roles: tuple[RoleSpec, ...]

    def options(self, clusters: Sequence[ClusterSpec]) -> list[tuple[PoolId, ...]]:
        """Every placement of one replica: a pool per role, all on one open, selected cluster."""
        out: list[tuple[PoolId, ...]] = []
        for c in clusters:
            if not c.open or (self.region is not None and c.region != self.region):
                continue
            per_role = [[(c.name, p.name) for p in c.pools if r.fits(p)] for r in self.roles]
            out.extend(_product(per_role))
        return out


def _product(lists: Sequence[Sequence[PoolId]]) -> Iterator[tuple[PoolId, ...]]:
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for tail in _product(lists[1:]):
            yield (head, *tail)


@dataclass(frozen=True)
class Scenario:
    """A fleet and the deployments scheduled on it, in order."""

    clusters: tuple[ClusterSpec, ...]
    deployments: tuple[DeploymentSpec, ...]

    @property
    def pools(self) -> dict[PoolId, PoolSpec]:
        """Every pool by (cluster, pool)."""
        return {(p.cluster, p.name): p for c in self.clusters for p in c.pools}


def _role(rng: random.Random) -> RoleSpec:
    return RoleSpec(
        tensor=rng.choice([1, 1, 2, 2, 4, 8]),
        pipeline=rng.choice([1, 1, 1, 2]),
        count=rng.choice([1, 1, 2]),
        arch=rng.choice(["Hopper", "Ampere", None, None]),
    )


def random_pools(
    rng: random.Random, cluster: str, nodes: tuple[int, int] = NODES, pools: tuple[int, int] = POOLS
) -> tuple[PoolSpec, ...]:
    """A random cluster's pools, each of a random class and a random number of nodes within the bounds."""
    return tuple(
        PoolSpec(cluster, f"p{j}", rng.choice(list(CLASSES)), rng.randint(*nodes)) for j in range(rng.randint(*pools))
    )


def scenario(seed: int) -> Scenario:
    """A small random fleet and deployment sequence, the same for the same seed."""
    rng = random.Random(seed)
    clusters = []
    for i in range(rng.randint(*CLUSTERS)):
        name = f"c{i}"
        pools = random_pools(rng, name)
        state = rng.random()
        clusters.append(ClusterSpec(name, rng.choice(["a", "b"]), state > 0.1, 0.05 < state <= 0.1, pools))
    deployments = []
    for i in range(rng.randint(*DEPLOYMENTS)):
        disaggregated = rng.random() < 0.2
        roles = (_role(rng), _role(rng)) if disaggregated else (_role(rng),)
        region = rng.choice(["a", None, None])
        deployments.append(DeploymentSpec(f"d{i}", rng.randint(*REPLICAS), region, roles))
    return Scenario(tuple(clusters), tuple(deployments))


# Exact packing: can these workers all sit on the pool's nodes, each worker on distinct nodes?


@cache
def _packs(free: tuple[int, ...], workers: tuple[Worker, ...]) -> bool:
    """Whether ``workers`` (sorted largest first) fit on nodes with ``free`` GPUs (sorted)."""
    if not workers:
        return True
    (g, k), rest = workers[0], workers[1:]
    candidates = [i for i, f in enumerate(free) if f >= g]
    if len(candidates) < k:
        return False
    tried: set[tuple[int, ...]] = set()
    for chosen in _combinations(candidates, k):
        after = list(free)
        for i in chosen:
            after[i] -= g
        key = tuple(sorted(after))
        if key in tried:
            continue  # nodes with the same free GPUs are interchangeable
        tried.add(key)
        if _packs(key, rest):
            return True
    return False


def _combinations(items: Sequence[int], k: int) -> Iterator[tuple[int, ...]]:
    if k == 0:
        yield ()
        return
    for i in range(len(items) - k + 1):
        for tail in _combinations(items[i + 1 :], k - 1):
            yield (items[i], *tail)


def fits(pool: PoolSpec, workers: Sequence[Worker]) -> bool:
    """Whether ``workers`` fit on ``pool`` in some packing."""
    return _packs((pool.per_node,) * pool.nodes, tuple(sorted(workers, reverse=True)))


def _load(
    placed: dict[PoolId, list[Worker]], dep: DeploymentSpec, chosen: Sequence[tuple[PoolId, ...]]
) -> dict[PoolId, list[Worker]]:
    load = {k: list(v) for k, v in placed.items()}
    for option in chosen:
        for role, pool in zip(dep.roles, option, strict=True):
            load.setdefault(pool, []).extend(role.workers)
    return load


def _feasible(pools: dict[PoolId, PoolSpec], load: dict[PoolId, list[Worker]], touched: set[PoolId]) -> bool:
    return all(fits(pools[p], load.get(p, [])) for p in touched)


def best_step(scene: Scenario, placed: dict[PoolId, list[Worker]], dep: DeploymentSpec) -> int:
    """The most replicas of ``dep`` that fit beside ``placed``."""
    pools, options = scene.pools, dep.options(scene.clusters)
    for k in range(dep.replicas, 0, -1):
        for chosen in combinations_with_replacement(options, k):
            touched = {p for option in chosen for p in option}
            if _feasible(pools, _load(placed, dep, chosen), touched):
                return k
    return 0


def best_sequence(scene: Scenario) -> int:
    """The most replicas of all the deployments together, by depth-first search with a bound."""
    pools = scene.pools
    deps = scene.deployments
    options = [d.options(scene.clusters) for d in deps]
    best = 0

    def search(i: int, placed: dict[PoolId, list[Worker]], total: int) -> None:
        nonlocal best
        if total + sum(d.replicas for d in deps[i:]) <= best:
            return
        if i == len(deps):
            best = total
            return
        dep = deps[i]
        for k in range(dep.replicas, -1, -1):
            if total + k + sum(d.replicas for d in deps[i + 1 :]) <= best:
                return
            for chosen in combinations_with_replacement(options[i], k):
                touched = {p for option in chosen for p in option}
                load = _load(placed, dep, chosen)
                if _feasible(pools, load, touched):
                    search(i + 1, load, total + k)

    search(0, {}, 0)
    return best


@dataclass(frozen=True)
class Step:
    """One deployment of a sequence: replicas placed, the most that fit, and whether a pool is now overfull."""

    placed: int
    optimum: int
    overcommitted: bool


def run_scheduler(scene: Scenario) -> list[Step]:
    """Schedule the deployments in order, each beside the replicas of those before it."""
    classes = [gpu_class(name, per_node=n, arch=arch) for name, (n, arch) in CLASSES.items()]
    clusters = [
        cluster(
            c.name,
            *(Pool(p.name, p.class_name, p.nodes) for p in c.pools),
            labels={"region": c.region},
            ready=c.open or c.cordoned,
            cordoned=c.cordoned,
        )
        for c in scene.clusters
    ]
    pools = scene.pools
    replicas: list[ModelReplica] = []
    placed: dict[PoolId, list[Worker]] = {}
    steps = []
    for dep in scene.deployments:
        shapes = [Shape(tensor=r.tensor, pipeline=r.pipeline, count=r.count, cel=ARCH_CEL[r.arch]) for r in dep.roles]
        labels = {"region": dep.region} if dep.region is not None else None
        if len(shapes) == 1:
            model = deployment(dep.name, replicas=dep.replicas, shape=shapes[0], match_labels=labels)
        else:
            model = deployment(
                dep.name, replicas=dep.replicas, prefill=shapes[0], decode=shapes[1], match_labels=labels
            )
        optimum = best_step(scene, placed, dep)
        # A new deployment has no replicas of its own: it sees the others through the clusters' summaries.
        result = schedule(model, fleet_view(clusters, classes, replicas))
        replicas.extend(replicas_of(result, model))
        for p in result.placements:
            for role, rp in zip(dep.roles, p.roles, strict=True):
                placed.setdefault((p.cluster, rp.pool), []).extend(role.workers)
        overfull = not all(fits(pools[k], v) for k, v in placed.items())
        steps.append(Step(result.placed, optimum, overfull))
    return steps


@dataclass(frozen=True)
class Quality:
    """The figures of one quality run."""

    scenarios: int
    deployments: int
    placed: int  # replicas placed within what fits (placements beyond the optimum do not count)
    step_optimum: int
    sequence_optimum: int
    short_steps: int  # deployments that placed fewer than their per-step optimum
    over_replicas: int  # replicas placed beyond what any packing fits
    overcommitted_steps: int  # deployments after which a pool holds more than fits on its nodes
    seconds: float

    @property
    def step_percent(self) -> float:
        """Placed as a percentage of the per-step optimum."""
        return 100.0 * self.placed / self.step_optimum if self.step_optimum else 100.0

    @property
    def sequence_percent(self) -> float:
        """Placed as a percentage of the per-sequence optimum."""
        return 100.0 * self.placed / self.sequence_optimum if self.sequence_optimum else 100.0


def measure(scenarios: int, seed: int = 0) -> Quality:
    """Run ``scenarios`` seeded scenarios."""
    start = time.perf_counter()
    totals: Counter[str] = Counter()
    for i in range(scenarios):
        scene = scenario(seed + i)
        steps = run_scheduler(scene)
        totals["deployments"] += len(steps)
        totals["placed"] += sum(min(s.placed, s.optimum) for s in steps)
        totals["step"] += sum(s.optimum for s in steps)
        totals["sequence"] += best_sequence(scene)
        totals["short"] += sum(s.placed < s.optimum for s in steps)
        totals["over"] += sum(max(0, s.placed - s.optimum) for s in steps)
        totals["overfull"] += sum(s.overcommitted for s in steps)
    return Quality(
        scenarios,
        totals["deployments"],
        totals["placed"],
        totals["step"],
        totals["sequence"],
        totals["short"],
        totals["over"],
        totals["overfull"],
        time.perf_counter() - start,
    )


def report(q: Quality) -> str:
    """The quality figures as printed lines."""
    verdict = "meets" if q.step_percent >= TARGET else "MISSES"
    return "\n".join(
        [
            f"  {q.scenarios} random fleets ({_span(CLUSTERS)} clusters x {_span(POOLS)} pools of {_span(NODES)}"
            f" nodes), {q.deployments} deployments of {_span(REPLICAS)} replicas in sequences of {_span(DEPLOYMENTS)}"
            f" ({q.seconds:.1f} s)",
            f"  placed {q.placed} replicas; per-step optimum {q.step_optimum}: {q.step_percent:.2f}%"
            f" (target >= {TARGET:g}%: {verdict}); {q.short_steps} deployment(s) placed fewer than they could",
            f"  whole-sequence optimum (any order, no spreading) {q.sequence_optimum}: {q.sequence_percent:.2f}%",
            f"  overcommitted: {q.over_replicas} replica(s) placed beyond what fits;"
            f" {q.overcommitted_steps} deployment(s) left a pool holding more than its nodes have",
        ]
    )


def _span(bounds: tuple[int, int]) -> str:
    return f"{bounds[0]}-{bounds[1]}"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the placement quality."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from bench import cost  # noqa: PLC0415 - the cost row builds on this module's fleets

    print("Placement quality")
    print(report(measure(args.scenarios, args.seed)))
    print(cost.report(cost.measure(args.scenarios, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
