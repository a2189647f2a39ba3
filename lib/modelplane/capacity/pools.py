"""The capacity of every pool of the fleet: declared or observed, minus what ModelReplicas hold.

- A pool has ``maxNodeCount`` nodes when that bound is set, else ``nodeCount``
  (the autoscaler can grow it that far; ``minNodeCount`` only bounds shrinking).
  Each node has the per-node count of the class's accelerator, its first
  ``claim: DRA`` device (what ``compose-inference-class`` publishes in
  ``status.accelerator``). A pool whose class is missing or has no DRA device
  has no known capacity and is left out.
- Every counted ModelReplica holds, on the pool each of its roles names,
  ``gpusPerNode`` GPUs on ``nodesPerWorker`` distinct nodes per worker, from its
  own spec. GPU-granular: two 4-GPU workers share one 8-GPU node.
- When the cluster reports an observed figure (KAI or Kueue), the GPUs in use
  that no Ready ModelReplica explains (observed minus what the Ready replicas on
  the pool hold, the excluded deployment's too) are other workloads: they are
  taken off the nodes as well, most-used nodes first. A replica that is not
  Ready yet may not show in the observed figure, so it is counted on top: the
  estimate errs towards less free capacity, never more. Which node holds what
  is a model (see ``modelplane.capacity.nodes``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from modelplane.capacity.clusters import ClusterInfo, cluster_info
from modelplane.capacity.holdings import DeploymentKey, Holding, replica_holding
from modelplane.capacity.nodes import NodeFree
from modelplane.capacity.observed import Observed, Source
from modelplane.classes import review_class
from modelplane.topology import Footprint
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

PoolKey = tuple[str, str]
"""A pool by (cluster name, pool name)."""


@dataclass(frozen=True)
class PoolSpec:
    """One pool as declared: where it is, its class and its size."""

    cluster: str
    pool: str
    class_name: str
    nodes: int
    per_node: int
    observed: Observed | None


@dataclass(frozen=True)
class PoolCapacity:
    """The capacity of one pool, in accelerators.

    Attributes:
        cluster: The InferenceCluster.
        pool: The pool's name.
        class_name: The pool's InferenceClass.
        per_node: Accelerators per node.
        nodes: Nodes in the pool.
        held: Accelerators the counted ModelReplicas hold.
        observed_in_use: Accelerators the cluster's scheduler reports in use, if it does.
        source: Where the figure of accelerators in use comes from.
        overcommitted: Accelerators held beyond what the nodes have (0 normally).
        node_free: Free accelerators per node.
    """

    cluster: str
    pool: str
    class_name: str
    per_node: int
    nodes: int
    held: int
    observed_in_use: int | None
    source: Source
    overcommitted: int
    node_free: NodeFree

    @property
    def declared(self) -> int:
        """Accelerators the pool has (nodes x per node)."""
        return self.nodes * self.per_node

    @property
    def free(self) -> int:
        """Accelerators free."""
        return self.node_free.free

    @property
    def in_use(self) -> int:
        """Accelerators in use (declared - free)."""
        return self.declared - self.free


def accelerator_counts(classes: Iterable[InferenceClass]) -> dict[str, int]:
    """The per-node accelerator count of each class that has one, by class name."""
    counts: dict[str, int] = {}
    for klass in sorted(classes, key=lambda c: (c.metadata.name or "") if c.metadata else ""):
        if klass.metadata is None or not klass.metadata.name or klass.spec is None:
            continue
        accelerator = review_class(klass.spec).accelerator
        if accelerator is not None:
            counts.setdefault(klass.metadata.name, accelerator.count_per_node)
    return counts


def pool_specs(clusters: Iterable[ClusterInfo], per_node: Mapping[str, int]) -> list[PoolSpec]:
    """Every pool of ``clusters`` whose class has an accelerator, sorted by (cluster, pool).

    Args:
        clusters: The clusters.
        per_node: Accelerators per node by class name (see ``accelerator_counts``).
    """
    specs: dict[PoolKey, PoolSpec] = {}
    for cluster in clusters:
        for pool in cluster.pools:
            count = per_node.get(pool.class_name)
            if count is not None and (cluster.name, pool.name) not in specs:
                specs[cluster.name, pool.name] = PoolSpec(
                    cluster.name, pool.name, pool.class_name, pool.nodes, count, pool.observed
                )
    return [specs[k] for k in sorted(specs)]


def _tally(
    holdings: Iterable[Holding], exclude_deployment: DeploymentKey | None
) -> tuple[dict[PoolKey, list[Footprint]], dict[PoolKey, int]]:
    """What the counted replicas hold on each pool, and the GPUs Ready replicas explain there."""
    counted: dict[PoolKey, list[Footprint]] = defaultdict(list)
    explained: dict[PoolKey, int] = defaultdict(int)
    for holding in holdings:
        excluded = exclude_deployment is not None and holding.deployment == exclude_deployment
        for role in holding.roles:
            key = (holding.cluster, role.pool)
            if holding.ready:
                explained[key] += role.footprint.total_gpus
            if not excluded:
                counted[key].append(role.footprint)
    return counted, explained


@lru_cache(maxsize=16384)
def _pool_nodes(spec: PoolSpec, footprints: tuple[Footprint, ...], explained: int) -> tuple[NodeFree, int]:
    """The pool's nodes once the replicas and the unexplained observed usage are on them, and the overflow.

    A pure function of its arguments, called for every pool on every scheduling run: an unchanged
    pool is not counted again.
    """
    nodes, overflow = NodeFree.empty(nodes=spec.nodes, per_node=spec.per_node), 0
    if footprints:
        nodes, overflow = nodes.hold_all(footprints)
    if spec.observed is not None:
        nodes, missing = nodes.use(max(0, spec.observed.in_use - explained))
        overflow += missing
    return nodes, overflow


def count_capacities(
    pools: Iterable[PoolSpec], holdings: Iterable[Holding], *, exclude_deployment: DeploymentKey | None = None
) -> dict[PoolKey, PoolCapacity]:
    """Compute each pool's capacity from its spec and the replicas' holdings.

    Args:
        pools: The pools (see ``pool_specs``).
        holdings: What every ModelReplica of the fleet holds.
        exclude_deployment: A ModelDeployment whose replicas are not subtracted
            (the one being scheduled: it accounts for its own replicas).

    Returns:
        Capacity per (cluster, pool), sorted by key.
    """
    counted, explained = _tally(holdings, exclude_deployment)
    capacities: dict[PoolKey, PoolCapacity] = {}
    for spec in sorted(pools, key=lambda p: (p.cluster, p.pool)):
        key = (spec.cluster, spec.pool)
        footprints = tuple(counted.get(key, ()))
        nodes, overflow = _pool_nodes(spec, footprints, explained.get(key, 0))
        capacities[key] = PoolCapacity(
            cluster=spec.cluster,
            pool=spec.pool,
            class_name=spec.class_name,
            per_node=spec.per_node,
            nodes=spec.nodes,
            held=sum(f.total_gpus for f in footprints),
            observed_in_use=spec.observed.in_use if spec.observed is not None else None,
            source=spec.observed.source if spec.observed is not None else Source.DECLARED,
            overcommitted=overflow,
            node_free=nodes,
        )
    return capacities


def free_nodes(
    pools: Iterable[PoolSpec], holdings: Iterable[Holding], *, exclude_deployment: DeploymentKey | None = None
) -> dict[PoolKey, NodeFree]:
    """The free GPUs per node of each pool: ``count_capacities`` without the figures, for the scheduler.

    Args:
        pools: The pools (see ``pool_specs``).
        holdings: What every ModelReplica of the fleet holds.
        exclude_deployment: A ModelDeployment whose replicas are not subtracted.

    Returns:
        The ``node_free`` of each pool's ``count_capacities`` entry, sorted by key.
    """
    counted, explained = _tally(holdings, exclude_deployment)
    free: dict[PoolKey, NodeFree] = {}
    for spec in sorted(pools, key=lambda p: (p.cluster, p.pool)):
        key = (spec.cluster, spec.pool)
        free[key], _ = _pool_nodes(spec, tuple(counted.get(key, ())), explained.get(key, 0))
    return free


def pool_capacities(
    clusters: Iterable[InferenceCluster | ClusterInfo],
    classes: Iterable[InferenceClass],
    replicas: Iterable[ModelReplica | Holding],
    *,
    exclude_deployment: DeploymentKey | None = None,
) -> dict[PoolKey, PoolCapacity]:
    """Compute the capacity of every pool of the fleet.

    Args:
        clusters: The InferenceClusters (models, or ``ClusterInfo`` read from them).
        classes: The InferenceClasses their pools name.
        replicas: Every ModelReplica of the fleet (models, or their ``Holding``).
        exclude_deployment: A ModelDeployment whose replicas are not subtracted.

    Returns:
        Capacity per (cluster, pool), sorted by key; pools whose class is
        missing or has no accelerator are absent.
    """
    infos = [i for i in map(as_cluster_info, clusters) if i is not None]
    holdings = [h for h in map(as_holding, replicas) if h is not None]
    return count_capacities(
        pool_specs(infos, accelerator_counts(classes)), holdings, exclude_deployment=exclude_deployment
    )


def as_cluster_info(cluster: InferenceCluster | ClusterInfo) -> ClusterInfo | None:
    """A cluster as ``ClusterInfo`` (read from the model when it is one)."""
    return cluster if isinstance(cluster, ClusterInfo) else cluster_info(cluster)


def as_holding(replica: ModelReplica | Holding) -> Holding | None:
    """A replica as its ``Holding`` (read from the model when it is one)."""
    return replica if isinstance(replica, Holding) else replica_holding(replica)
