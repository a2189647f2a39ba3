"""What an InferenceCluster publishes for schedulers: per pool, the free GPUs per node and what holds the rest.

The cluster's function reads only its own ModelReplicas; a ModelDeployment then
reads the clusters' summaries instead of every ModelReplica of the fleet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from modelplane.capacity.clusters import ClusterInfo, PoolInfo
from modelplane.capacity.nodes import NodeFree
from modelplane.capacity.observed import Observed
from modelplane.capacity.occupancy import Occupancy, RoleOccupancy
from modelplane.capacity.victims import choose_victims, take_roles


@dataclass(frozen=True)
class Listed:
    """One ModelReplica as its cluster lists it.

    Attributes:
        occupancy: What it holds, from its spec, and whether it is Ready.
        created: Its ``metadata.creationTimestamp`` as written (RFC 3339), "" when unknown.
    """

    occupancy: Occupancy
    created: str = ""


@dataclass(frozen=True)
class PoolSummary:
    """One pool of the cluster, as a scheduler needs it.

    Attributes:
        name: The pool's name.
        class_name: Its InferenceClass.
        nodes: Its nodes.
        per_node: Accelerators per node.
        node_free: Free accelerators per node once the counted replicas and the
            observed usage no Ready replica explains are on the nodes.
        counted: ``namespace/name`` of every replica whose GPUs ``node_free``
            holds on this pool, sorted.
        held: Accelerators the counted replicas hold on this pool.
        observed: What the cluster's scheduler reports in use, if it does.
        overflow: Accelerators in use beyond what the nodes have: Ready replicas
            that do not fit and observed usage that does not fit (0 normally).
        preemptible: Per priority value ``q`` of the replicas not Ready here, highest first, the free
            accelerators per node once those of priority ``q`` or lower give way: what a new replica
            of a priority above ``q`` may have. Only where that differs from ``node_free``.
        preemptible_serving: Per priority value ``q`` of the serving replicas here that may give way
            (``Occupancy.preemptible``), highest first, the free accelerators per node once every
            replica of ``q`` or lower that may give way does, serving or not: what a new replica of a
            priority above ``q`` may have when nothing else has room.
    """

    name: str
    class_name: str
    nodes: int
    per_node: int
    node_free: NodeFree
    counted: tuple[str, ...]
    held: int
    observed: Observed | None
    overflow: int
    preemptible: tuple[tuple[int, NodeFree], ...] = ()
    preemptible_serving: tuple[tuple[int, NodeFree], ...] = ()


@dataclass(frozen=True)
class ClusterSummary:
    """The capacity summary of one InferenceCluster.

    Attributes:
        pools: By pool name, in spec order; only pools whose class has an accelerator count.
        overcommitted: ``namespace/name`` of the replicas not Ready that do not fit, sorted.
        preempted: Serving replicas that give way, each with the replica not Ready of a higher
            priority that takes its place (both ``namespace/name``), sorted.
    """

    pools: Mapping[str, PoolSummary]
    overcommitted: tuple[str, ...]
    preempted: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class _Replica:
    """A replica of this cluster, with only its roles on pools of known size."""

    namespace: str
    name: str
    created: str
    ready: bool
    roles: tuple[RoleOccupancy, ...]
    priority: int = 0
    preemptible: bool = False

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


def summarize(cluster: ClusterInfo, per_node: Mapping[str, int], replicas: Iterable[Listed]) -> ClusterSummary:
    """Summarize a cluster's pools from its ModelReplicas.

    1. Only replicas whose ``occupancy.cluster`` is the cluster count; each role
       holds on the pool it names; a role whose pool is not in the cluster, or
       whose class has no known accelerator count, is ignored.
    2. Ready replicas first: they run, so they are held whatever happens (first
       fit decreasing, ``NodeFree.occupy_all``) and never overcommitted; GPUs
       beyond the nodes go to the pool's overflow.
    3. Then the observed usage no Ready replica explains (the scheduler's figure
       minus the GPUs Ready replicas hold on the pool, at least 0) is taken off
       the most-used nodes first (``NodeFree.use``); what does not fit is overflow.
    4. Then replicas not Ready, highest priority first, then oldest by (created,
       namespace, name), "" created first. Each is taken strictly on all its roles
       at once (roles sharing a pool taken together, larger shapes first); if any
       role does not fit, the replica is overcommitted: it holds nothing and is
       listed in ``overcommitted``. These are the lowest-priority, newest
       placements beyond capacity, not serving yet: placed concurrently, or
       preempted by a higher priority; the ModelDeployment that owns one moves it.
       Before that, a replica that does not fit takes the place of serving replicas
       of a strictly lower priority that may give way (``Occupancy.preemptible``:
       their FleetQuotas allow ``preemption: LowerPriority``) and share a pool with
       it: the fewest that make it fit, then the lowest priorities, then the newest
       (``modelplane.capacity.victims``). Those are
       *preempted* (listed with it in ``preempted``): their GPUs are its, no longer
       counted, and their ModelDeployments move them surge-first; while none frees
       enough, none is taken and it is overcommitted.
    5. Per pool, what a new replica of a higher priority may have: the free
       accelerators per node before the replicas of each priority (and lower)
       were taken in step 4; and, where serving replicas may give way, the same
       with those of each priority (and lower) given back too.

    A replica listed twice (same namespace and name) counts once: Ready before
    not Ready, then the oldest.

    Args:
        cluster: The InferenceCluster.
        per_node: Accelerators per node by InferenceClass name.
        replicas: The cluster's ModelReplicas (others are ignored), in any order.

    Returns:
        The summary; the same for the same replicas in any order.
    """
    pools = _pools(cluster, per_node)
    # 1. This cluster's replicas, each role on a pool of known size.
    own = _own(cluster.name, pools, replicas)
    nodes = {name: NodeFree.empty(nodes=max(0, p.nodes), per_node=per_node[p.class_name]) for name, p in pools.items()}
    overflow = dict.fromkeys(pools, 0)
    counted: dict[str, set[str]] = defaultdict(set)
    held: dict[str, int] = defaultdict(int)
    # 2. Ready replicas run: held whatever happens, first fit decreasing; what does not fit is overflow.
    ready = [r for r in own if r.ready]
    for pool in pools:
        roles = [(r.key, role) for r in ready for role in r.roles if role.pool == pool]
        nodes[pool], overflow[pool] = nodes[pool].occupy_all(role.footprint for _, role in roles)
        for key, role in roles:
            counted[pool].add(key)
            held[pool] += role.footprint.total_gpus
    # 3. Observed usage no Ready replica explains is other work: off the most-used nodes first.
    for pool, info in pools.items():
        if info.observed is not None:
            nodes[pool], missing = nodes[pool].use(max(0, info.observed.in_use - held[pool]))
            overflow[pool] += missing
    # 4. Replicas not Ready, oldest first, all roles or nothing; the ones that do not fit are overcommitted.
    overcommitted = []
    before: dict[int, dict[str, NodeFree]] = {}  # per priority, the pools before any replica of it was taken
    waiting = sorted((r for r in own if not r.ready), key=lambda r: (-r.priority, r.created, r.namespace, r.name))
    yielding = [r for r in ready if r.preemptible]
    taker: dict[str, _Replica] = {}  # by a serving replica that gives way, the replica taking its place
    for replica in waiting:
        before.setdefault(replica.priority, dict(nodes))
        after = take_roles(nodes, replica.roles)
        if after is None:
            free = [v for v in yielding if v.key not in taker]
            victims = choose_victims(nodes, replica.priority, replica.roles, free)
            after = victims.nodes if victims is not None else None
            for victim in victims.chosen if victims is not None else ():
                taker[victim.key] = replica
                for role in victim.roles:
                    counted[role.pool].discard(victim.key)
                    held[role.pool] -= role.footprint.total_gpus
        if after is None:
            overcommitted.append(replica.key)
            continue
        nodes.update(after)
        for role in replica.roles:
            counted[role.pool].add(replica.key)
            held[role.pool] += role.footprint.total_gpus
    summaries = {
        name: PoolSummary(
            name=name,
            class_name=info.class_name,
            nodes=nodes[name].nodes,
            per_node=nodes[name].per_node,
            node_free=nodes[name],
            counted=tuple(sorted(counted[name])),
            held=held[name],
            observed=info.observed,
            overflow=overflow[name],
            preemptible=_preemptible(name, before, nodes[name]),
            preemptible_serving=_preemptible_serving(name, before, nodes[name], yielding, taker),
        )
        for name, info in pools.items()
    }
    preempted = tuple(sorted((v, t.key) for v, t in taker.items()))
    return ClusterSummary(summaries, tuple(sorted(overcommitted)), preempted)


def _preemptible_serving(
    pool: str,
    before: Mapping[int, Mapping[str, NodeFree]],
    final: NodeFree,
    yielding: Iterable[_Replica],
    taker: Mapping[str, _Replica],
) -> tuple[tuple[int, NodeFree], ...]:
    """Step 5, serving replicas too: per priority ``q`` of those here that may give way, highest first.

    The pool as a new replica of a priority above ``q`` finds it once replicas not serving yet of ``q``
    or lower give way (``_preemptible``'s figure) and so do the serving ones of ``q`` or lower that may
    (one already given to a replica of ``q`` or lower comes back with it). Left out where it is the pool as it is.
    """
    here = [v for v in yielding if any(r.pool == pool for r in v.roles)]
    out = []
    for q in sorted({v.priority for v in here}, reverse=True):
        lower = [p for p in before if p <= q]
        nodes = before[max(lower)][pool] if lower else final
        for v in here:
            t = taker.get(v.key)
            if v.priority <= q and (t is None or t.priority <= q):
                for role in v.roles:
                    if role.pool == pool:
                        nodes = nodes.release(role.footprint)
        if nodes != final:
            out.append((q, nodes))
    return tuple(out)


def _preemptible(
    pool: str, before: Mapping[int, Mapping[str, NodeFree]], final: NodeFree
) -> tuple[tuple[int, NodeFree], ...]:
    """Step 5: per priority ``q``, highest first, the pool as a new replica of a priority above ``q`` finds it.

    That is the pool before the first replica of priority ``q`` was taken in step 4 (what is above
    ``q`` holds; ``q`` and lower give way). Left out where it is the pool as it is: nothing of
    theirs is here, nor of any lower priority (each step only takes).
    """
    return tuple((q, before[q][pool]) for q in sorted(before, reverse=True) if before[q][pool] != final)


def _pools(cluster: ClusterInfo, per_node: Mapping[str, int]) -> dict[str, PoolInfo]:
    """The cluster's pools whose class has a known accelerator count, by name (the first of a repeated name)."""
    out: dict[str, PoolInfo] = {}
    for pool in cluster.pools:
        if per_node.get(pool.class_name, 0) >= 1:
            out.setdefault(pool.name, pool)
    return out


def _own(cluster: str, pools: Mapping[str, PoolInfo], listed: Iterable[Listed]) -> list[_Replica]:
    """The replicas of ``cluster``, one per namespace/name, with their roles on ``pools`` only."""
    out: dict[str, _Replica] = {}
    for item in listed:
        h = item.occupancy
        if h.cluster != cluster:
            continue
        roles = tuple(r for r in h.roles if r.pool in pools)
        replica = _Replica(h.namespace, h.name, item.created, h.ready, roles, h.priority, h.preemptible)
        kept = out.get(replica.key)
        if kept is None or _rank(replica) < _rank(kept):
            out[replica.key] = replica
    return [out[k] for k in sorted(out)]


_Rank = tuple[bool, str, tuple[tuple[str, str, int, int, int], ...]]


def _rank(replica: _Replica) -> _Rank:
    """Which of two listings of one replica counts: Ready, then the oldest, then a stable order of roles."""
    roles = tuple(
        (r.role, r.pool, r.footprint.gpus_per_node, r.footprint.nodes_per_worker, r.footprint.workers)
        for r in replica.roles
    )
    return (not replica.ready, replica.created, roles)
