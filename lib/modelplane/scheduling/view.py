"""The fleet as every placement reads it: one view, built in one place, shared by all callers.

A ``FleetView`` holds what a scheduler needs of the fleet and nothing of any one
deployment:

- the clusters (``ClusterInfo``) with the facts that decide whether they take new
  replicas: labels, cordoned, draining, being deleted, Ready and since when; and the
  clusters that exist but cannot be read, with why;
- the classes (``ClassView``), judged by a DRA CEL matcher whose verdicts are kept
  with the view, so deployments sharing a selector evaluate it once;
- per pool whose class has an accelerator count, its free GPUs per node and which
  replicas that figure counts, as the pool's InferenceCluster publishes them
  (``status.capacity.pools[]``, built by ``modelplane.capacity.summary``). A pool its
  cluster has not summarized yet (a new cluster, or a status from before the summary)
  is read as declared, less the usage its cluster's scheduler observes.

The scheduler starts from the published figures and knows which replicas they count
(a kept replica counted there takes nothing more); ``--explain`` places afresh against
``free_for``, the figures with the deployment's own counted replicas given back. The scheduler, ``--explain``,
the preview and the bench all read this view; none builds its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar, cast

from modelplane.capacity import (
    ClusterInfo,
    DeploymentKey,
    NodeFree,
    Observed,
    Occupancy,
    PoolInfo,
    PoolKey,
    cluster_info,
)
from modelplane.capacity.pools import as_cluster_info, as_occupancy
from modelplane.capacity.summary import ClusterSummary, Listed, summarize
from modelplane.scheduling.celmatch import match_cel
from modelplane.scheduling.devices import ClassJudge, ClassView, DeviceMatcher, SelectorError, class_view
from modelplane.scheduling.labels import LabelSelector
from modelplane.scheduling.placer import Memo
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

T = TypeVar("T")
_DERIVED_LIMIT = 256  # derived figures per view (selectors, priorities): beyond it start again rather than grow


@dataclass(frozen=True)
class PoolState:
    """One pool's free capacity as its cluster publishes it.

    Attributes:
        free: Free GPUs per node, after every replica in ``counted``.
        counted: The replicas ("namespace/name") whose GPUs ``free`` already takes off.
        preemptible: Per priority ``q``, highest first, the free GPUs per node a new replica of a
            priority above ``q`` may have (replicas not serving yet of ``q`` or lower give way).
        preemptible_serving: The same once serving replicas of ``q`` or lower that may give way do too.
    """

    free: NodeFree
    counted: frozenset[str] = frozenset()
    preemptible: tuple[tuple[int, NodeFree], ...] = ()
    preemptible_serving: tuple[tuple[int, NodeFree], ...] = ()


@dataclass(frozen=True)
class FleetView:
    """The fleet: clusters with their facts, classes, and each pool's free capacity.

    Attributes:
        clusters: Every readable InferenceCluster by name, sorted by name.
        classes: Every readable InferenceClass by name.
        pools: Per pool with a known accelerator count, its published free capacity.
        unreadable: InferenceClusters that exist but cannot be read, by name, with why.
        overcommitted: Replicas ("namespace/name") a cluster found beyond its capacity, by cluster.
        preempted: Serving replicas ("namespace/name") a cluster gives to a higher priority, by cluster,
            each with the replica that takes its place (``status.capacity.preempted``).
        matcher: Evaluates a DRA CEL selector against a device kind.
    """

    clusters: Mapping[str, ClusterInfo]
    classes: Mapping[str, ClassView]
    pools: Mapping[PoolKey, PoolState]
    unreadable: Mapping[str, str] = field(default_factory=dict)
    overcommitted: Mapping[str, frozenset[str]] = field(default_factory=dict)
    matcher: DeviceMatcher = match_cel
    preempted: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Selector verdicts per (expression, class, device kind): shared by every judge of this view.
    _verdicts: dict[tuple[str, str, int], bool | SelectorError] = field(default_factory=dict, compare=False, repr=False)
    # Clusters judged per set of roles on this view's published figures (``Placer``'s memo).
    memo: Memo = field(default_factory=dict, compare=False, repr=False)
    # What the methods below derive from the view, once per view (a fleet's calls share one view while
    # no cluster or class changes): read-only, by the method and its argument.
    _derived: dict[tuple[str, object], object] = field(default_factory=dict, compare=False, repr=False)

    def judge(self) -> ClassJudge:
        """A judge of this view's classes (one per deployment: its fits are per role)."""
        return ClassJudge(self.matcher, self.classes, self._verdicts)

    def cluster_list(self) -> Sequence[ClusterInfo]:
        """The clusters, sorted by name."""
        return self._once(("clusters", None), lambda: tuple(self.clusters.values()))

    def selected(self, selector: LabelSelector) -> Sequence[ClusterInfo]:
        """The clusters whose labels ``selector`` matches, sorted by name."""
        return self._once(
            ("selected", selector), lambda: tuple(c for c in self.clusters.values() if selector.matches(c.labels))
        )

    def deleting(self) -> frozenset[str]:
        """The clusters being deleted."""
        return self._once(("deleting", None), lambda: frozenset(c.name for c in self.clusters.values() if c.deleting))

    def draining(self) -> frozenset[str]:
        """The clusters that drain (``spec.drain``)."""
        return self._once(("draining", None), lambda: frozenset(c.name for c in self.clusters.values() if c.draining))

    def free(self) -> Mapping[PoolKey, NodeFree]:
        """Each pool's free GPUs per node, as published."""
        return self._once(("free", None), lambda: {k: s.free for k, s in self.pools.items()})

    def preemptible(self, priority: int) -> Mapping[PoolKey, NodeFree]:
        """Each pool where a new replica of ``priority`` may take the place of lower ones not serving yet.

        Its free GPUs per node once replicas not serving yet of a lower priority give way (the
        largest published ``q`` below ``priority``); pools where none would are left out.
        """
        return self._once(("preemptible", priority), lambda: _deeper(self.pools, priority, serving=False))

    def preemptible_serving(self, priority: int) -> Mapping[PoolKey, NodeFree]:
        """Each pool where a new replica of ``priority`` may take the place of lower ones, serving ones too.

        Its free GPUs per node once every replica of a lower priority that may give way does (the
        largest published ``q`` below ``priority`` of ``preemptibleServing``); pools where none would are
        left out.
        """
        return self._once(("serving", priority), lambda: _deeper(self.pools, priority, serving=True))

    def counted(self) -> Mapping[PoolKey, frozenset[str]]:
        """Each pool's replicas ("namespace/name") its published figure counts."""
        return self._once(("counted", None), lambda: {k: s.counted for k, s in self.pools.items() if s.counted})

    def _once(self, key: tuple[str, object], derive: Callable[[], T]) -> T:
        if key not in self._derived:
            if len(self._derived) >= _DERIVED_LIMIT:
                self._derived.clear()
            self._derived[key] = derive()
        return cast(T, self._derived[key])

    def free_for(self, key: DeploymentKey, own: Iterable[Occupancy]) -> dict[PoolKey, NodeFree]:
        """Each pool's free GPUs per node before any of deployment ``key``'s replicas.

        The replicas of ``own`` that a pool counted are given back (``NodeFree.release``):
        the deployment accounts for its replicas itself. One a pool has not counted yet (placed
        since its cluster last summarized) was never taken off, so nothing is given back.
        """
        free = {k: s.free for k, s in self.pools.items()}
        for occupancy in own:
            if occupancy.deployment != key:
                continue
            name = f"{occupancy.namespace}/{occupancy.name}"
            for role in occupancy.roles:
                pool = (occupancy.cluster, role.pool)
                state = self.pools.get(pool)
                if state is not None and name in state.counted:
                    free[pool] = free[pool].release(role.footprint)
        return free


def _deeper(pools: Mapping[PoolKey, PoolState], priority: int, *, serving: bool) -> dict[PoolKey, NodeFree]:
    out = {}
    for key, state in pools.items():
        figures = state.preemptible_serving if serving else state.preemptible
        if not figures:  # most pools: nothing gives way there (read for every pool at every call)
            continue
        found = next((n for q, n in figures if q < priority), None)
        if found is not None:
            out[key] = found
    return out


@dataclass(frozen=True)
class Published:
    """One pool's free capacity as its InferenceCluster publishes it (``status.capacity.pools[]``).

    Attributes:
        per_node: Accelerators per node the summary was made with (``devicesPerNode``).
        counts: ``counts[f]`` nodes have ``f`` accelerators free (``nodesByFree``).
        counted: The replicas ("namespace/name") the summary counts (``replicas``).
        preemptible: Per priority, highest first, the counts a replica of a priority above it finds
            (``preemptible``).
        serving: The same once serving replicas that may give way do too (``preemptibleServing``).
    """

    per_node: int
    counts: tuple[int, ...]
    counted: frozenset[str] = frozenset()
    preemptible: tuple[tuple[int, tuple[int, ...]], ...] = ()
    serving: tuple[tuple[int, tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class ClusterFacts:
    """One InferenceCluster as read: its facts, each pool's published summary, and what it found overcommitted."""

    info: ClusterInfo
    published: Mapping[str, Published] = field(default_factory=dict)
    overcommitted: frozenset[str] = frozenset()
    preempted: Mapping[str, str] = field(default_factory=dict)  # a serving replica that gives way: by whom


_MOST_PER_NODE = 64  # no node has more accelerators: a larger figure is no summary


def cluster_facts(cluster: InferenceCluster | ClusterInfo) -> ClusterFacts | None:
    """Read an InferenceCluster's facts and what it publishes (``status.capacity``); None without a name or spec."""
    if isinstance(cluster, ClusterInfo):
        return ClusterFacts(cluster)
    info = cluster_info(cluster)
    if info is None:
        return None
    capacity = cluster.status.capacity if cluster.status is not None else None
    published: dict[str, Published] = {}
    for pool in (capacity.pools or []) if capacity is not None else []:
        read = published_pool(pool.devicesPerNode, pool.nodesByFree, pool.replicas)
        if pool.name is not None and read is not None:
            preemptible = _figures(pool.devicesPerNode, pool.preemptible or [])
            serving = _figures(pool.devicesPerNode, pool.preemptibleServing or [])
            published.setdefault(pool.name, replace(read, preemptible=preemptible, serving=serving))
    overcommitted = frozenset(capacity.overcommitted or ()) if capacity is not None else frozenset()
    listed = (capacity.preempted or []) if capacity is not None else []
    preempted = {p.replica: p.by for p in listed if p.replica and p.by}
    return ClusterFacts(info, published, overcommitted, preempted)


class _Figure(Protocol):
    priority: int | None
    nodesByFree: dict[str, int] | None  # noqa: N815 - the field as the model names it


def _figures(per_node: int | None, items: Iterable[_Figure]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Per priority, the counts of free accelerators a replica above it finds (ones that do not read are left out)."""
    deeper = ((p.priority, published_pool(per_node, p.nodesByFree, ())) for p in items)
    return tuple((q, d.counts) for q, d in deeper if q is not None and d is not None)


def published_pool(
    per_node: int | None, by_free: Mapping[str, int] | None, replicas: Iterable[str] | None
) -> Published | None:
    """A pool's published summary; None when it is absent or does not read as one (a key no count of free ones)."""
    if per_node is None or by_free is None or not 0 < per_node <= _MOST_PER_NODE:
        return None
    counts = [0] * (per_node + 1)
    for key, nodes in by_free.items():
        if not key.isdigit() or int(key) > per_node or nodes < 0:
            return None
        counts[int(key)] += nodes
    return Published(per_node, tuple(counts), frozenset(replicas or ()))


def build_view(
    clusters: Iterable[ClusterFacts],
    classes: Iterable[InferenceClass | ClassView],
    *,
    matcher: DeviceMatcher = match_cel,
    unreadable: Mapping[str, str] | None = None,
) -> FleetView:
    """The one place a ``FleetView`` is built.

    A pool's free capacity is its published summary when that summary agrees with the pool
    (same accelerators per node, as many nodes); otherwise, as a cluster that has not summarized
    yet, the pool's declared nodes less the usage its cluster's scheduler observes.

    Args:
        clusters: The readable InferenceClusters (the first of a name wins, in name order).
        classes: The InferenceClasses (models, or ``ClassView``).
        matcher: The DRA CEL matcher.
        unreadable: Clusters that exist but cannot be read, by name, with why.
    """
    facts: dict[str, ClusterFacts] = {}
    for fact in sorted(clusters, key=lambda f: f.info.name):
        facts.setdefault(fact.info.name, fact)
    views = class_views(classes)
    pools: dict[PoolKey, PoolState] = {}
    for name, fact in facts.items():
        for pool in fact.info.pools:
            per_node = views[pool.class_name].accelerator_per_node if pool.class_name in views else None
            if per_node is None or (name, pool.name) in pools:
                continue
            published = fact.published.get(pool.name)
            kind = (pool.nodes, per_node, pool.observed, published)
            state = _STATES.get(kind)
            if state is None:
                if len(_STATES) >= _STATES_LIMIT:
                    _STATES.clear()
                state = _STATES[kind] = _pool_state(pool, per_node, published)
            pools[name, pool.name] = state
    overcommitted = {n: f.overcommitted for n, f in facts.items() if f.overcommitted}
    preempted = {n: dict(f.preempted) for n, f in facts.items() if f.preempted}
    infos = {n: f.info for n, f in facts.items()}
    return FleetView(infos, views, pools, dict(unreadable or {}), overcommitted, matcher, preempted)


# Each pool's state by all that decides it (``_pool_state`` reads the pool's nodes and observed usage, the
# accelerators per node and the published summary, all frozen): a fleet's pools are mostly alike, and a
# view built again after one cluster changed finds the others' states here. Shared, read-only; the memo
# starts again past ``_STATES_LIMIT`` entries.
_PoolKind = tuple[int, int, Observed | None, Published | None]
_STATES: dict[_PoolKind, PoolState] = {}
_STATES_LIMIT = 4096


def _pool_state(pool: PoolInfo, per_node: int, published: Published | None) -> PoolState:
    if (
        published is not None
        and published.per_node == per_node
        and len(published.counts) == per_node + 1
        and sum(published.counts) == pool.nodes
    ):
        # A figure for a priority is read only as the pool's own: the same accelerators per node and nodes.
        def own(figures: Iterable[tuple[int, tuple[int, ...]]]) -> tuple[tuple[int, NodeFree], ...]:
            read = ((q, NodeFree(per_node, c)) for q, c in figures if len(c) == per_node + 1 and sum(c) == pool.nodes)
            return tuple(sorted(read, key=lambda e: -e[0]))

        return PoolState(
            NodeFree(per_node, published.counts),
            published.counted,
            own(published.preemptible),
            own(published.serving),
        )
    free = NodeFree.empty(nodes=pool.nodes, per_node=per_node)
    if pool.observed is not None:
        free, _ = free.use(pool.observed.in_use)
    return PoolState(free)


def summary_facts(info: ClusterInfo, summary: ClusterSummary) -> ClusterFacts:
    """A cluster's facts with the summary its function publishes (``modelplane.capacity.summary``)."""
    published = {
        name: Published(
            pool.per_node,
            pool.node_free.counts,
            frozenset(pool.counted),
            tuple((q, n.counts) for q, n in pool.preemptible),
            tuple((q, n.counts) for q, n in pool.preemptible_serving),
        )
        for name, pool in summary.pools.items()
    }
    return ClusterFacts(info, published, frozenset(summary.overcommitted), dict(summary.preempted))


def fleet_view(
    clusters: Iterable[InferenceCluster | ClusterInfo],
    classes: Iterable[InferenceClass | ClassView],
    replicas: Iterable[ModelReplica | Occupancy | Listed] = (),
    *,
    matcher: DeviceMatcher = match_cel,
    unreadable: Mapping[str, str] | None = None,
) -> FleetView:
    """Build the view from typed inputs, each cluster summarized from ``replicas`` as its function would.

    A cluster's ``PoolInfo.observed`` is read as its scheduler's own figure (what KAI or Kueue
    reports), as the cluster's function reads it.

    Args:
        clusters: The InferenceClusters (models, or ``ClusterInfo``).
        classes: The InferenceClasses (models, or ``ClassView``).
        replicas: Every ModelReplica of the fleet (models, their ``Occupancy``, or as listed with their age).
        matcher: The DRA CEL matcher.
        unreadable: Clusters that exist but cannot be read, by name, with why.
    """
    infos = [i for i in map(as_cluster_info, clusters) if i is not None]
    views = class_views(classes)
    per_node = {n: v.accelerator_per_node for n, v in views.items() if v.accelerator_per_node is not None}
    by_cluster: dict[str, list[Listed]] = {}
    for replica in replicas:
        listed = replica if isinstance(replica, Listed) else _listed(replica)
        if listed is not None:
            by_cluster.setdefault(listed.occupancy.cluster, []).append(listed)
    facts = [summary_facts(info, summarize(info, per_node, by_cluster.get(info.name, ()))) for info in infos]
    return build_view(facts, views.values(), matcher=matcher, unreadable=unreadable)


def _listed(replica: ModelReplica | Occupancy) -> Listed | None:
    occupancy = as_occupancy(replica)  # the generated model has no creationTimestamp: oldest first by name
    return Listed(occupancy) if occupancy is not None else None


def class_views(classes: Iterable[InferenceClass | ClassView]) -> dict[str, ClassView]:
    """The readable classes by name (the first of a name wins, in name order)."""
    views: dict[str, ClassView] = {}
    read = (c if isinstance(c, ClassView) else class_view(c) for c in classes)
    for view in sorted((v for v in read if v is not None), key=lambda v: v.name):
        views.setdefault(view.name, view)
    return views
