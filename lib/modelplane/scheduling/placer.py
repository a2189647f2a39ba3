"""The placement engine: which cluster and pools take one replica, and why the others do not.

A ``Placer`` holds the free GPUs per node of every pool (``modelplane.capacity.NodeFree``)
as placing uses them up. For one replica it:

1. judges each selected cluster once: a cluster that is cordoned, drains, is being
   deleted or is not Ready takes nothing, nor one that lacks a serving-stack component the
   replica needs (``lacking``); otherwise the pools whose class suits each role's node
   selector and topology (``modelplane.scheduling.devices``) and that have enough nodes
   for a worker are eligible;
2. finds each cluster's best option: one eligible pool per role on which every worker
   fits (prefill and decode share the cluster and, sharing a pool, are packed together),
   the fewest GPUs stranded on the nodes taken, then the fewest left free;
3. scores the clusters with an option and room under ``spec.placement.maxReplicasPerCluster``:
   with an objective (``CostOptimized``, ``CarbonAware``: ``modelplane.scheduling.costs``) what
   the replica's accelerators cost or emit per hour there first, then (with ``spec.modelCacheRef``)
   whether the deployment's ModelCache has a Ready copy there, then the fewest replicas of
   this deployment on the cluster (spread), then the option's stranded and left-over GPUs
   (best fit), then the names (ties), and takes the lowest, recording which part of the score
   beat the runner-up (``modelplane.scheduling.decision``); with no option anywhere, says why
   each selected cluster takes nothing.

With an objective a cluster's best option is its cheapest combination of pools first, then the best fit.

``--explain`` runs this same engine on the same fleet: what it prints is this decision.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import TYPE_CHECKING, Any

from modelplane.capacity import NodeFree, PoolKey
from modelplane.capacity.clusters import ClusterInfo
from modelplane.scheduling.decision import Score, cache_rank, decide
from modelplane.scheduling.devices import ClassJudge, PoolReason, RoleRequest
from modelplane.scheduling.fit import Option, as_score, cost_rank, pool_fit, score, size, stranded
from modelplane.scheduling.placement import Origin, Placement, RolePlacement
from modelplane.scheduling.rejection import (
    ClusterRejection,
    PoolRejection,
    RejectReason,
    Unplaced,
    pool_message,
    summarize,
)
from modelplane.scheduling.request import Request, needs, plural
from modelplane.stack.modes import NeededBy
from modelplane.topology import Footprint, Role

if TYPE_CHECKING:
    from modelplane.scheduling.costs import Objective
    from modelplane.scheduling.gate import GateState, QuotaGate

_DEEP, _SERVING = 1, 2  # how deep a figure where lower priorities give way is (``Placer._mirror``)
_OVERCOMMITTED = "it has no room for this replica: replicas placed there concurrently took it"

Eligible = Mapping[Role, tuple[PoolKey, ...]]
"""Per role, the pools of one cluster that can take it."""
_Ranked = tuple[tuple[Any, ...], Option]
"""An option with its score (lowest wins)."""
Admit = Callable[[tuple[PoolKey, ...]], bool]
"""Whether a combination of pools (one per role) may take the replica (the deployment's quotas)."""


@dataclass
class Judged:
    """What is known of each cluster for one set of roles on one fleet: eligibility, and best option as published."""

    eligible: dict[str, Eligible | ClusterRejection] = field(default_factory=dict)
    options: dict[str, Option | None] = field(default_factory=dict)


Memo = dict[tuple[tuple[RoleRequest, ...], str], Judged]
"""Judgements of clusters on one fleet, per set of roles and objective ("" for none; see ``Placer``)."""
_MEMO_LIMIT = 256  # sets of roles: beyond it (many shapes on one fleet) start again rather than grow


@dataclass(frozen=True)
class Snapshot:
    """A placer's free capacity at one moment (``Placer.snapshot``)."""

    free: Mapping[PoolKey, NodeFree]
    released: frozenset[tuple[str, PoolKey]]
    touched: frozenset[str]
    gate: GateState | None = None
    deep: Mapping[PoolKey, NodeFree] = field(default_factory=dict)
    serving: Mapping[PoolKey, NodeFree] = field(default_factory=dict)


def unschedulable(cluster: ClusterInfo) -> ClusterRejection | None:
    """Why ``cluster`` takes no new replica whatever its pools (being deleted, draining, cordoned, not Ready)."""
    if cluster.deleting:
        return ClusterRejection(cluster.name, RejectReason.CORDONED, "being deleted")
    if cluster.draining:
        return ClusterRejection(cluster.name, RejectReason.CORDONED, "drains (spec.drain)")
    if cluster.cordoned:
        return ClusterRejection(cluster.name, RejectReason.CORDONED, "cordoned")
    if not cluster.ready:
        return ClusterRejection(cluster.name, RejectReason.NOT_READY, cluster.not_ready)
    return None


_NEEDED = {
    NeededBy.ALL: "every replica needs",
    NeededBy.MULTI_NODE: "multi-node replicas need",
    NeededBy.POOL_ROUTING: "replicas routed through a pool need",
}


def lacking(cluster: ClusterInfo, request: Request) -> ClusterRejection | None:
    """Why ``cluster`` takes none of ``request``'s replicas: serving-stack components they need that it lacks."""
    gaps = [
        g
        for g in cluster.lacking
        if g.needed_by is NeededBy.ALL
        or (g.needed_by is NeededBy.MULTI_NODE and request.multi_node)
        or (g.needed_by is NeededBy.POOL_ROUTING and request.pool_routing)
    ]
    if not gaps:
        return None
    said = "; ".join(
        f"lacks {g.component} ({g.mode}{f': {g.why}' if g.why else ''}), which {_NEEDED[g.needed_by]}"
        if g.mode
        else f"lacks {g.component}, which {_NEEDED[g.needed_by]}"
        for g in gaps
    )
    return ClusterRejection(cluster.name, RejectReason.COMPONENT_MISSING, said)


class Placer:
    """One deployment's placements on the fleet, the free capacity used up as it places."""

    def __init__(  # noqa: PLR0913 - the deployment, the fleet, and what placing it ranks by
        self,
        request: Request,
        clusters: Sequence[ClusterInfo],
        judge: ClassJudge,
        free: Mapping[PoolKey, NodeFree],
        counted: Mapping[PoolKey, frozenset[str]] | None = None,
        memo: Memo | None = None,
        *,
        objective: Objective | None = None,
        cached: frozenset[str] | None = None,
        gate: QuotaGate | None = None,
        preemptible: Mapping[PoolKey, NodeFree] | None = None,
        preemptible_serving: Mapping[PoolKey, NodeFree] | None = None,
        selected: Sequence[ClusterInfo] | None = None,
    ) -> None:
        """Start from ``free``, the free GPUs per node of each pool as its cluster published them.

        Args:
            request: The deployment.
            clusters: Every cluster of the fleet, sorted by name.
            judge: Judges the pools' classes for the roles.
            free: Per pool whose class has a known accelerator count, its free GPUs per node.
            counted: Per pool, the replicas ("namespace/name") ``free`` already takes off: occupancy
                one of them at the shape it runs takes nothing more, and releasing it gives its
                GPUs back.
            memo: Judgements of clusters kept with the fleet they were made on (``FleetView.memo``),
                shared by every placer of the same ``free``: a cluster's eligibility for a set of
                roles, and its best option while its pools are as published.
            objective: What the deployment's strategy places by first (None: Spread).
            cached: The clusters where the deployment's ModelCache has a Ready copy, ranked before
                the others after the objective (None: the deployment references no cache).
            gate: The FleetQuotas of the deployment's namespace (None: none with a limit): every
                replica accounted for is charged to it, and no option it refuses is taken.
            preemptible: Per pool where replicas not serving yet of a lower priority than the
                deployment's would give way, its free GPUs per node then (``FleetView.preemptible``):
                a replica that fits nowhere else is placed there, and its cluster moves them.
            preemptible_serving: The same where serving replicas of a lower priority whose FleetQuotas
                allow it would give way too (``FleetView.preemptible_serving``): a replica that fits
                nowhere even by ``preemptible`` is placed there, its cluster lists them as preempted,
                and their deployments move them surge-first.
            selected: The clusters of ``clusters`` the request's cluster selector matches, when the caller
                knows them (``FleetView.selected``); else they are matched here.
        """
        self.request = request
        self.judge = judge
        self.clusters = clusters
        self.selected = (
            selected if selected is not None else [c for c in clusters if request.selector.matches(c.labels)]
        )
        self._free = dict(free)
        self._counted = counted or {}
        memo = {} if memo is None else memo
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
        self.objective = objective
        self.cached = cached
        self.gate = gate
        # The same accounting as ``_free`` on the pools where lower priorities would give way.
        self._deep = dict(preemptible or {})
        self._serving = dict(preemptible_serving or {})
        self._most = request.policy.max_per_cluster
        self._judged = memo.setdefault((request.roles, str(objective.decided_by) if objective else ""), Judged())
        self._released: set[tuple[str, PoolKey]] = set()
        self._touched: set[str] = set()  # clusters whose pools differ from ``free`` as given
        self._spread: Counter[str] = Counter()
        # A cluster's best option only changes with its own pools: placing a replica elsewhere keeps it.
        self._options: dict[str, Option | None] = {}

    def free(self, key: PoolKey) -> NodeFree | None:
        """A pool's free GPUs per node now; None when its capacity is unknown."""
        return self._free.get(key)

    def spread(self, cluster: str) -> int:
        """How many of the deployment's replicas are on ``cluster`` so far."""
        return self._spread[cluster]

    def occupy(
        self,
        cluster: str,
        roles: Iterable[tuple[str, Footprint]],
        *,
        own: bool,
        strict: bool = False,
        name: str = "",
    ) -> bool:
        """Account for a replica that exists (it may not fit: existing replicas are never refused).

        With ``name`` ("namespace/name"), the roles are the shape the replica runs: on a pool whose
        published figure counts it already, nothing more is taken. With ``strict``, a replica that
        would hold GPUs its pools do not have is not accounted for, and False is returned.
        """
        # In the order ``best_option`` takes them, so a kept replica leaves the nodes as placing it did.
        after: dict[PoolKey, NodeFree] = {}
        roles = sorted(roles, key=lambda r: size(r[1]))
        for pool, fp in roles:
            key = (cluster, pool)
            if key in self._free and not (name and self._is_counted(name, key)):
                after[key], missing = after.get(key, self._free[key]).occupy(fp)
                if strict and missing:
                    return False
        if self.gate is not None:
            # What exists counts against its quotas, whether or not the quota has counted it yet.
            need = self.gate.need(((cluster, pool), fp) for pool, fp in roles)
            if strict and self.gate.refusal(need) is not None:
                return False
            self.gate.charge(need, name)
        for pool, fp in roles:
            key = (cluster, pool)
            if not (name and self._is_counted(name, key)):
                for deeper in (self._deep, self._serving):
                    if key in deeper:
                        deeper[key] = deeper[key].occupy(fp)[0]
        self._free.update(after)
        if after:
            self._touched.add(cluster)
            self._options.pop(cluster, None)
        if own:
            self._spread[cluster] += 1
        return True

    def charge_quota(self, name: str, cluster: str, roles: Iterable[tuple[str, Footprint]]) -> None:
        """Charge a replica that takes no capacity a new one could have to the quotas (it is leaving).

        A replica leaving a draining cluster or a pool taken out of the spec runs there until its
        replacement serves: its accelerators count against its quotas until then, as the quota's
        function counts them, although nothing new may be placed where it runs.
        """
        if self.gate is not None:
            self.gate.charge(self.gate.need(((cluster, pool), fp) for pool, fp in roles), name)

    def release(self, name: str, cluster: str, roles: Iterable[tuple[str, Footprint]]) -> None:
        """Give back what a replica the published figures count holds (it moves, is reshaped or goes)."""
        if self.gate is not None:
            self.gate.credit(name)
        for pool, fp in roles:
            key = (cluster, pool)
            if key in self._free and self._is_counted(name, key):
                self._free[key] = self._free[key].release(fp)
                for deeper in (self._deep, self._serving):
                    if key in deeper:
                        deeper[key] = deeper[key].release(fp)
                self._released.add((name, key))
                self._touched.add(cluster)
                self._options.pop(cluster, None)

    def _is_counted(self, name: str, key: PoolKey) -> bool:
        return name in self._counted.get(key, ()) and (name, key) not in self._released

    def snapshot(self) -> Snapshot:
        """The free capacity now, to ``restore`` after trying holds."""
        gate = self.gate.snapshot() if self.gate is not None else None
        return Snapshot(
            dict(self._free),
            frozenset(self._released),
            frozenset(self._touched),
            gate,
            dict(self._deep),
            dict(self._serving),
        )

    def restore(self, state: Snapshot) -> None:
        """Go back to the free capacity of a ``snapshot``."""
        self._free = dict(state.free)
        self._released = set(state.released)
        self._touched = set(state.touched)
        self._deep = dict(state.deep)
        self._serving = dict(state.serving)
        self._options.clear()
        if self.gate is not None and state.gate is not None:
            self.gate.restore(state.gate)

    def count(self, cluster: str) -> None:
        """Count one replica of the deployment on ``cluster`` (spread)."""
        self._spread[cluster] += 1

    def candidates(self) -> list[tuple[Score, Option]]:
        """Every selected cluster that can take the next replica, with its score, lowest (winning) first."""
        out = []
        for cluster in self.selected:
            if self._full(cluster.name):
                continue
            option = self.option(cluster)
            if option is not None:
                out.append(
                    (score(self._spread[cluster.name], option, cluster.name, cached=self._cached(cluster.name)), option)
                )
        ranked = self.objective is not None
        return sorted(out, key=lambda c: (cost_rank(c[0].cost) if ranked else (), cache_rank(c[0]), c[0]))

    def _cached(self, cluster: str) -> bool | None:
        """Whether the deployment's ModelCache has a Ready copy on ``cluster`` (None: it references none)."""
        return None if self.cached is None else cluster in self.cached

    def _full(self, cluster: str) -> bool:
        """Whether ``cluster`` runs ``spec.placement.maxReplicasPerCluster`` of the deployment's replicas already."""
        return self._most is not None and self._spread[cluster] >= self._most

    def option(self, cluster: ClusterInfo) -> Option | None:
        """``cluster``'s best option for the next replica; None when it cannot take one."""
        name = cluster.name
        eligible = self.eligible(cluster)
        if isinstance(eligible, ClusterRejection):
            return None
        if name in self._options:
            return self._within_quota(self._options[name], eligible)
        if name in self._touched:
            option = self.best_option(eligible)
        else:  # its pools are as published: as judged for any deployment of these roles
            options = self._judged.options
            if name not in options:
                options[name] = self.best_option(eligible)
            option = options[name]
        self._options[name] = option
        return self._within_quota(option, eligible)

    def _within_quota(self, option: Option | None, eligible: Eligible) -> Option | None:
        """``option`` when the quotas take it; else the best of the cluster's options they take (None: none)."""
        gate = self.gate
        if option is None or gate is None or gate.refusal(self._need(option.pools)) is None:
            return option
        return self.best_option(eligible, admit=lambda keys: gate.refusal(self._need(keys)) is None)

    def _need(self, keys: tuple[PoolKey, ...]) -> Counter[tuple[str, int]]:
        """What one replica on ``keys`` (one pool per role) takes of each quota limit."""
        if self.gate is None:
            return Counter()
        return self.gate.need(zip(keys, (r.footprint for r in self.request.roles), strict=True))

    def place(self, name: str, ordinal: int, origin: Origin, *, avoid: str = "") -> Placement | Unplaced:
        """Place one replica, or say why it cannot be placed.

        Args:
            name: The replica's name.
            ordinal: Its ordinal.
            origin: Why it is placed (new, or placed again).
            avoid: A cluster it must not be placed on (it was found beyond that cluster's capacity).
        """
        best, second = self._rank(avoid)
        preempts = serving = False
        if best is None and self._deep:
            # Nothing has room: take the place of lower priorities not serving yet, where they would give way.
            best, second = self._rank_preempting(avoid, self._deep)
            preempts = best is not None
        if best is None and self._serving:
            # Not even so: take the place of serving lower priorities whose FleetQuotas allow it (surge-first).
            best, second = self._rank_preempting(avoid, self._serving)
            serving = best is not None
        if best is None:
            rejections = tuple(
                ClusterRejection(avoid, RejectReason.INSUFFICIENT_CAPACITY, _OVERCOMMITTED)
                if cluster.name == avoid
                else self.rejection(cluster)
                for cluster in self.selected
            )
            reason, message = summarize(rejections, len(self.clusters))
            return Unplaced(name, ordinal, reason, message, len(self.clusters), rejections)
        decision = decide(self._score(best), None if second is None else self._score(second), self.objective)
        option = best[1]
        cluster_name = option.pools[0][0]
        after = self._take(option.pools)
        if after is None:  # pragma: no cover - the option was found to fit on these very nodes
            msg = f"option {option.pools} no longer fits"
            raise AssertionError(msg)
        self._mirror(option.pools, after, via=_SERVING if serving else _DEEP if preempts else 0)
        self._free.update(after)
        self._touched.add(cluster_name)
        self._options.pop(cluster_name, None)
        self._spread[cluster_name] += 1
        if self.gate is not None:
            self.gate.charge(self._need(option.pools), name)
        roles = tuple(
            RolePlacement(r.role, key[1], r.footprint) for r, key in zip(self.request.roles, option.pools, strict=True)
        )
        return Placement(
            name, ordinal, cluster_name, roles, origin, decision=decision, preempts=preempts, preempts_serving=serving
        )

    def _rank(self, avoid: str) -> tuple[_Ranked | None, _Ranked | None]:
        """The best and the runner-up option over the selected clusters, as the free capacity is now."""
        # Plain tuples in the loop (it runs per cluster per replica); the two best become ``Score``s once.
        best: _Ranked | None = None
        second: _Ranked | None = None
        ranked = self.objective is not None
        cached = self.cached
        for cluster in self.selected:
            if cluster.name == avoid or self._full(cluster.name):
                continue
            option = self.option(cluster)
            if option is None:
                continue
            score: tuple[Any, ...] = (
                self._spread[cluster.name],
                option.waste,
                option.leftover,
                cluster.name,
                option.pools,
            )
            if cached is not None:
                score = (cluster.name not in cached, *score)
            if ranked:
                score = (cost_rank(option.cost), *score)
            if best is None or score < best[0]:
                best, second = (score, option), best
            elif second is None or score < second[0]:
                second = (score, option)
        return best, second

    def _rank_preempting(
        self, avoid: str, figures: Mapping[PoolKey, NodeFree]
    ) -> tuple[_Ranked | None, _Ranked | None]:
        """``_rank`` with the pools where lower priorities would give way as ``figures`` has them then.

        The chosen pools keep that figure (the replica takes their place there, for every later
        replica too); the others stay as they are.
        """
        normal, touched, options = self._free, self._touched, self._options
        self._free = {**normal, **figures}
        self._touched = touched | {c.name for c in self.selected}  # not as published: judged afresh
        self._options = {}
        try:
            best, second = self._rank(avoid)
        finally:
            deep = self._free
            self._free, self._touched, self._options = normal, touched, options
        for key in best[1].pools if best is not None else ():
            self._free[key] = deep[key]
        return best, second

    def _mirror(self, keys: tuple[PoolKey, ...], after: Mapping[PoolKey, NodeFree], *, via: int) -> None:
        """Take a placed replica off the pools' figures where lower priorities would give way, too.

        ``via`` is how deep the figure it was placed by is (0: the pools as they are, ``_DEEP``, ``_SERVING``):
        the figures no deeper than it are the pools as they are now; a deeper one loses the replica's GPUs.
        """
        for i in sorted(range(len(keys)), key=lambda i: size(self.request.roles[i].footprint)):
            key, fp = keys[i], self.request.roles[i].footprint
            for depth, deeper in ((_DEEP, self._deep), (_SERVING, self._serving)):
                if key not in deeper:
                    continue
                if depth <= via:  # the figures are one now
                    deeper[key] = after[key]
                else:
                    deeper[key] = deeper[key].take(fp) or deeper[key].occupy(fp)[0]

    def _score(self, ranked: tuple[tuple[Any, ...], Option]) -> Score:
        key, option = ranked
        spread, waste, left, cluster, pools = key[-5:]
        return as_score(spread, waste, left, cluster, pools, cost=option.cost, cached=self._cached(cluster))

    def rejection(self, cluster: ClusterInfo) -> ClusterRejection:
        """Why ``cluster`` takes no replica now."""
        if self._full(cluster.name):
            message = f"runs spec.placement.maxReplicasPerCluster ({self._most}) of this deployment's replicas"
            return ClusterRejection(cluster.name, RejectReason.INSUFFICIENT_CAPACITY, message)
        eligible = self.eligible(cluster)
        if isinstance(eligible, ClusterRejection):
            return eligible
        quota = self._quota_rejection(cluster, eligible)
        return quota if quota is not None else self._capacity_rejection(cluster, eligible)

    def _quota_rejection(self, cluster: ClusterInfo, eligible: Eligible) -> ClusterRejection | None:
        """Why ``cluster``'s pools, with room for the replica, take it beyond a quota; None if that is not why."""
        if self.gate is None:
            return None
        fits = self.best_option(eligible)
        refusal = self.gate.refusal(self._need(fits.pools)) if fits is not None else None
        if refusal is None:
            return None
        return ClusterRejection(cluster.name, RejectReason.QUOTA_EXCEEDED, refusal.message)

    def eligible(self, cluster: ClusterInfo) -> Eligible | ClusterRejection:
        """Per role, the pools of ``cluster`` that can take it; or why the cluster cannot take the replica.

        It depends on the roles, the cluster and its pools' node counts only: judged once per fleet.
        A cluster that lacks a component the deployment needs is refused before (the deployment's
        routing, not only its roles, decides what it needs).
        """
        if cluster.lacking and unschedulable(cluster) is None:
            refused = lacking(cluster, self.request)
            if refused is not None:
                return refused
        judged = self._judged.eligible
        if cluster.name not in judged:
            judged[cluster.name] = self._judge_cluster(cluster)
        return judged[cluster.name]

    def _judge_cluster(self, cluster: ClusterInfo) -> Eligible | ClusterRejection:
        refused = unschedulable(cluster)
        if refused is not None:
            return refused
        eligible: dict[Role, tuple[PoolKey, ...]] = {}
        rejected: list[PoolRejection] = []
        for request in self.request.roles:
            keys = []
            for pool in cluster.pools:
                fit = self.judge.fit(request, pool.class_name)
                free = self._free.get((cluster.name, pool.name))
                if fit.misfit is not None:
                    rejected.append(PoolRejection(pool.name, request.role, fit.misfit, fit.message))
                elif free is not None and free.nodes < request.footprint.nodes_per_worker:
                    # No amount of waiting makes a worker fit a pool with too few nodes.
                    message = f"{needs(request.footprint)}; the pool has {plural(free.nodes, 'node')}"
                    rejected.append(PoolRejection(pool.name, request.role, PoolReason.TOO_FEW_NODES, message))
                elif free is not None:
                    keys.append((cluster.name, pool.name))
            eligible[request.role] = tuple(keys)
        if all(eligible.values()):
            return eligible
        empty = [r for r, keys in eligible.items() if not keys]
        lacking = [p for p in rejected if p.role in empty]
        reason = (
            RejectReason.CEL_ERROR
            if any(p.reason is PoolReason.CEL_ERROR for p in lacking)
            else RejectReason.NO_MATCHING_POOLS
        )
        if not cluster.pools:
            message = "has no pools"
        else:
            message = "; ".join(_pool_message(p, self.request.roles) for p in lacking)
        return ClusterRejection(cluster.name, reason, message, tuple(rejected))

    def best_option(self, eligible: Eligible, *, admit: Admit | None = None) -> Option | None:
        """The best combination of ``eligible`` pools for one replica; None when none fits now.

        With ``admit``, only combinations it admits (those within the deployment's quotas).
        """
        requests = self.request.roles
        if self.objective is not None:
            return self._cheapest_option(eligible, admit)
        best: Option | None = None
        if len(requests) == 1:  # one role: each pool on its own, and pools alike judged alike
            fp = requests[0].footprint
            for key in eligible[requests[0].role]:
                if admit is not None and not admit((key,)):
                    continue
                fit = pool_fit(self._free[key], fp)
                if fit is not None and (best is None or (*fit, (key,)) < (best.waste, best.leftover, best.pools)):
                    best = Option(fit[0], fit[1], (key,))
            return best
        for keys in product(*(eligible[r.role] for r in requests)):
            leftover = self._leftover(keys) if admit is None or admit(keys) else None
            if leftover is None:
                continue
            option = Option(self._waste(keys), leftover, keys)
            if best is None or (option.waste, option.leftover, keys) < (best.waste, best.leftover, best.pools):
                best = option
        return best

    def _cheapest_option(self, eligible: Eligible, admit: Admit | None = None) -> Option | None:
        """The cheapest (or cleanest) combination of ``eligible`` pools that fits, then the best fit."""
        objective, requests = self.objective, self.request.roles
        if objective is None:  # pragma: no cover - called only with an objective
            return None
        best: Option | None = None
        best_key: tuple[Any, ...] = ()
        for keys in product(*(eligible[r.role] for r in requests)):
            leftover = self._leftover(keys) if admit is None or admit(keys) else None
            if leftover is None:
                continue
            cost = objective.of((k, r.footprint) for k, r in zip(keys, requests, strict=True))
            option = Option(self._waste(keys), leftover, keys, cost)
            key = (cost_rank(cost), option.waste, option.leftover, keys)
            if best is None or key < best_key:
                best, best_key = option, key
        return best

    def _waste(self, keys: tuple[PoolKey, ...]) -> int:
        """GPUs a worker of each role strands on the tightest nodes that fit it: best fit by node, not by pool."""
        return sum(stranded(self._free[key], r.footprint) for key, r in zip(keys, self.request.roles, strict=True))

    def _leftover(self, keys: tuple[PoolKey, ...]) -> int | None:
        """The GPUs left free on the pools ``keys`` (per role) once the replica is on them; None if it does not fit."""
        requests = self.request.roles
        if len(keys) == 1:
            nodes, fp = self._free[keys[0]], requests[0].footprint
            return nodes.free - fp.total_gpus if nodes.fits(fp) else None
        if len(set(keys)) == len(keys):
            # Roles on pools of their own fit independently, and each takes exactly its GPUs.
            if all(self._free[k].fits(r.footprint) for k, r in zip(keys, requests, strict=True)):
                return sum(self._free[k].free - r.footprint.total_gpus for k, r in zip(keys, requests, strict=True))
            return None
        after = self._take(keys)
        return None if after is None else sum(n.free for n in after.values())

    def _take(self, keys: tuple[PoolKey, ...]) -> dict[PoolKey, NodeFree] | None:
        """The pools ``keys`` (per role) with the replica placed on them; None if it does not fit."""
        requests = self.request.roles
        after: dict[PoolKey, NodeFree] = {}
        # Larger shapes first when roles share a pool (first fit decreasing).
        for i in sorted(range(len(requests)), key=lambda i: size(requests[i].footprint)):
            nodes = after.get(keys[i], self._free[keys[i]]).take(requests[i].footprint)
            if nodes is None:
                return None
            after[keys[i]] = nodes
        return after

    def _capacity_rejection(self, cluster: ClusterInfo, eligible: Eligible) -> ClusterRejection:
        pools = []
        alone = True
        for request in self.request.roles:
            for key in eligible[request.role]:
                nodes = self._free[key]
                if nodes.fits(request.footprint):
                    continue
                alone = False
                g = request.footprint.gpus_per_node
                with_room = sum(nodes.counts[g:])
                message = (
                    f"{needs(request.footprint)}; {nodes.free} of {nodes.nodes * nodes.per_node} GPUs free,"
                    f" {plural(with_room, 'node')} with {g} free"
                )
                pools.append(PoolRejection(key[1], request.role, PoolReason.INSUFFICIENT_CAPACITY, message))
        if alone:
            message = "prefill and decode do not fit on its pools together"
        else:
            message = "; ".join(_pool_message(p, self.request.roles) for p in pools)
        return ClusterRejection(cluster.name, RejectReason.INSUFFICIENT_CAPACITY, message, tuple(pools))


def _pool_message(rejection: PoolRejection, roles: Sequence[RoleRequest]) -> str:
    return pool_message(rejection.role, rejection.pool, rejection.message, len(roles))
