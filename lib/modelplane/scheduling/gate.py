"""Keep one deployment's placements within the FleetQuotas of its namespace.

A ``QuotaGate`` holds, per limit of every quota that applies, the accelerators in use:

1. it starts from the use the quota's function last published (``status.limits[].inUse``),
   less what this deployment's own replicas held there (``status.limits[].deployments``): the
   deployment counts its own replicas itself, placed since the quota counted or not;
2. what replicas of a lower priority hold and a replica of this priority may take is set
   aside: what does not serve yet, and with ``preemption: LowerPriority`` what serves too (the
   quota's function then finds them beyond the limit and their deployments give way);
3. the placer charges each of the deployment's replicas as it accounts for it (kept,
   retiring, being deleted, leaving a pool taken out of its cluster's spec: that pool counts
   under the class its cluster published for it, ``status.removingPools[].className``) and
   each it places, and gives back a charge when a replica it
   accounted for moves or is released;
4. a replica is placed only on pools where every limit that covers them has room for it;
   when none has, the refusal names the quota, its limit, the use and the request.

Pure and deterministic; a quota with no limits covering a pool's class never refuses it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from modelplane.capacity import ClusterInfo, DeploymentKey, PoolKey
from modelplane.scheduling.devices import ClassJudge
from modelplane.scheduling.quotas import Limit, Quota, Quotas, covers
from modelplane.topology import Footprint

LimitKey = tuple[str, int]
"""A limit by (quota name, index in ``spec.limits``)."""


@dataclass(frozen=True)
class Refusal:
    """Why a replica does not fit a quota: the first limit it would take beyond its accelerators."""

    quota: str
    limit: Limit
    in_use: int
    requested: int
    preemptible: int = 0

    @property
    def message(self) -> str:
        """``FleetQuota team-a allows 16 nvidia-h100-8 accelerators, 12 in use, 8 requested``."""
        text = (
            f"FleetQuota {self.quota} allows {self.limit.accelerators} {self.limit.what},"
            f" {self.in_use} in use, {self.requested} requested"
        )
        if self.preemptible:
            text += f" ({self.preemptible} in use by lower priorities, which this priority may take)"
        return text


@dataclass(frozen=True)
class GateState:
    """A gate's charges at one moment (``QuotaGate.snapshot``)."""

    in_use: Mapping[LimitKey, int]
    named: Mapping[str, Mapping[LimitKey, int]]


@dataclass
class QuotaGate:
    """The accelerators in use per limit of the deployment's quotas, charged as its placer goes (module steps)."""

    limits: dict[LimitKey, tuple[Quota, Limit]]
    pool_class: Mapping[PoolKey, str]
    judge: ClassJudge
    in_use: dict[LimitKey, int]
    preemptible: dict[LimitKey, int]
    named: dict[str, Counter[LimitKey]] = field(default_factory=dict)
    _covering: dict[str, tuple[LimitKey, ...]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, quotas: Quotas, key: DeploymentKey, clusters: Iterable[ClusterInfo], judge: ClassJudge
    ) -> QuotaGate | None:
        """The gate of deployment ``key`` (steps 1 and 2); None when no quota of it has a limit."""
        limits = {(q.name, limit.index): (q, limit) for q in quotas.applying for limit in q.limits}
        if not limits:
            return None
        own = f"{key.namespace}/{key.name}"
        in_use: dict[LimitKey, int] = {}
        preemptible: dict[LimitKey, int] = {}
        for lk, (quota, _) in limits.items():
            published = quota.published.get(lk[1])
            if published is None:  # not counted yet: only this deployment's own replicas are known
                in_use[lk], preemptible[lk] = 0, 0
                continue
            in_use[lk] = max(0, published.in_use - published.deployments.get(own, 0))
            preemptible[lk] = min(in_use[lk], published.preemptible(quotas.priority, quota.preemption))
        pool_class = {(c.name, p.name): p.class_name for c in clusters for p in c.pools}
        # A pool taken out of the spec keeps its class (as its cluster published it) while its replicas
        # move: they hold their accelerators until then, as the quota's function counts them.
        pool_class.update(((c.name, pool), klass) for c in clusters for pool, klass in c.removing_classes)
        return cls(limits, pool_class, judge, in_use, preemptible)

    def need(self, pools: Iterable[tuple[PoolKey, Footprint]]) -> Counter[LimitKey]:
        """What a replica on ``pools`` (each role's pool and footprint) takes of each limit."""
        out: Counter[LimitKey] = Counter()
        for pool, fp in pools:
            class_name = self.pool_class.get(pool)
            if class_name is None:
                continue
            for lk in self._covers(class_name):
                out[lk] += fp.total_gpus
        return out

    def refusal(self, need: Mapping[LimitKey, int]) -> Refusal | None:
        """The first limit (by quota name, then index) ``need`` would take beyond its accelerators; None if none."""
        for lk in sorted(need):
            requested = need[lk]
            if not requested:
                continue
            quota, limit = self.limits[lk]
            if self.in_use[lk] - self.preemptible[lk] + requested > limit.accelerators:
                return Refusal(quota.name, limit, self.in_use[lk], requested, self.preemptible[lk])
        return None

    def charge(self, need: Mapping[LimitKey, int], name: str = "") -> None:
        """Count ``need`` as in use (step 3); under ``name`` ("namespace/name") it can be given back."""
        for lk, n in need.items():
            self.in_use[lk] += n
        if name and need:
            self.named.setdefault(name, Counter()).update(need)

    def credit(self, name: str) -> None:
        """Give back what was charged under ``name`` (a replica this placer accounted for moves or goes)."""
        for lk, n in self.named.pop(name, Counter()).items():
            self.in_use[lk] -= n

    def snapshot(self) -> GateState:
        """The charges now, to ``restore``."""
        return GateState(dict(self.in_use), {k: Counter(v) for k, v in self.named.items()})

    def restore(self, state: GateState) -> None:
        """Go back to the charges of a ``snapshot``."""
        self.in_use = dict(state.in_use)
        self.named = {k: Counter(v) for k, v in state.named.items()}

    def _covers(self, class_name: str) -> tuple[LimitKey, ...]:
        if class_name not in self._covering:
            self._covering[class_name] = tuple(
                lk for lk, (_, limit) in sorted(self.limits.items()) if covers(limit, class_name, self.judge)
            )
        return self._covering[class_name]
