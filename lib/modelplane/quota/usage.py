"""Count a FleetQuota's use: per limit, what its namespaces' ModelReplicas hold, and who is beyond it.

``count_use`` takes the quota, its namespaces' replicas (what each holds on which pools, whether it
serves, its priority and age) and which class each pool is of, and:

1. charges each replica, per limit, the accelerators of its roles on pools whose class the limit
   covers (``modelplane.scheduling.quotas.covers``); a replica no limit covers is left out;
2. counts every serving replica: what runs is never beyond a quota by its own doing. With
   ``preemption: LowerPriority`` the serving replicas are packed highest priority first, and one
   that no longer fits a limit that serving replicas of a higher priority fill is *preempted*:
   still counted (it holds its accelerators until its deployment retires it), and listed;
3. then the replicas not serving yet, highest priority first, then oldest: each is counted if
   every limit it is charged has room for it (with LowerPriority, what serving replicas of a
   lower priority hold is room it may take), and is *exceeded* otherwise: counted nowhere and
   listed, so its deployment withdraws it (placed concurrently into the last room, or preempted
   by a higher priority placed since);
4. sums each limit's use per InferenceClass, per priority and per ModelDeployment.

Deterministic: the result does not depend on the order of the replicas.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from modelplane.capacity import DeploymentKey, Occupancy, PoolKey
from modelplane.scheduling.quotas import Limit, Preemption, Quota


@dataclass(frozen=True)
class Replica:
    """One ModelReplica of the quota's namespaces: what it holds, and when it was created (RFC 3339, "" unknown)."""

    occupancy: Occupancy
    created: str = ""

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.occupancy.namespace}/{self.occupancy.name}"


@dataclass(frozen=True)
class LimitUse:
    """One limit's use.

    Attributes:
        limit: The limit.
        in_use: Accelerators the counted replicas hold on the pools it covers.
        classes: Per InferenceClass, what they hold on its pools.
        priorities: Per priority (value, class name), what its replicas hold and what of it does not serve yet.
        deployments: Per ModelDeployment ("namespace/name"), what its replicas hold.
    """

    limit: Limit
    in_use: int = 0
    classes: Mapping[str, int] = field(default_factory=dict)
    priorities: Mapping[tuple[int, str], tuple[int, int]] = field(default_factory=dict)
    deployments: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class QuotaUse:
    """A quota's use: per limit in spec order, and the replicas beyond a limit (sorted)."""

    limits: tuple[LimitUse, ...]
    exceeded: tuple[str, ...] = ()
    preempted: tuple[str, ...] = ()

    @property
    def over(self) -> tuple[LimitUse, ...]:
        """The limits whose use is beyond their accelerators (serving replicas beyond a lowered limit)."""
        return tuple(u for u in self.limits if u.in_use > u.limit.accelerators)


@dataclass(frozen=True)
class _Charged:
    replica: Replica
    charges: Mapping[int, int]  # limit index -> accelerators
    by_class: Mapping[tuple[int, str], int]  # (limit index, class) -> accelerators

    @property
    def order(self) -> tuple[int, str, str, str]:
        h = self.replica.occupancy
        return (-h.priority, self.replica.created, h.namespace, h.name)


def count_use(
    quota: Quota,
    replicas: Iterable[Replica],
    pool_class: Mapping[PoolKey, str],
    covers: Callable[[Limit, str], bool],
) -> QuotaUse:
    """Count ``quota``'s use (the module's steps).

    Args:
        quota: The FleetQuota.
        replicas: The ModelReplicas of the namespaces it selects (a name listed twice counts once).
        pool_class: Each pool's InferenceClass, by (cluster, pool).
        covers: Whether a limit covers a class's pools.
    """
    # 1. Each replica's charge per limit.
    charged = _charge(quota, _unique(replicas), pool_class, covers)
    lower = quota.preemption is Preemption.LOWER_PRIORITY
    counted: list[_Charged] = []
    used: Counter[int] = Counter()
    # 2. What serves counts; with LowerPriority, packed highest first to find what gives way.
    serving = sorted((c for c in charged if c.replica.occupancy.ready), key=lambda c: c.order)
    preempted = _preempted(quota, serving) if lower else []
    for c in serving:
        counted.append(c)
        used.update(c.charges)
    # 3. What does not serve yet, highest priority first, then oldest: counted where every limit has room.
    exceeded = []
    for c in sorted((c for c in charged if not c.replica.occupancy.ready), key=lambda c: c.order):
        room = {
            i: _limit(quota, i) - used[i] + (_below(serving, i, c.replica.occupancy.priority) if lower else 0)
            for i in c.charges
        }
        if all(n <= room[i] for i, n in c.charges.items()):
            counted.append(c)
            used.update(c.charges)
        else:
            exceeded.append(c.replica.key)
    # 4. Each limit's use by class, priority and deployment.
    return QuotaUse(
        tuple(_limit_use(limit, counted) for limit in quota.limits),
        tuple(sorted(exceeded)),
        tuple(sorted(preempted)),
    )


def _unique(replicas: Iterable[Replica]) -> list[Replica]:
    """One per namespace/name: the serving copy, then the oldest."""
    out: dict[str, Replica] = {}
    for r in replicas:
        kept = out.get(r.key)
        if kept is None or (not r.occupancy.ready, r.created) < (not kept.occupancy.ready, kept.created):
            out[r.key] = r
    return [out[k] for k in sorted(out)]


def _charge(
    quota: Quota, replicas: Iterable[Replica], pool_class: Mapping[PoolKey, str], covers: Callable[[Limit, str], bool]
) -> list[_Charged]:
    covering: dict[str, tuple[Limit, ...]] = {}
    out = []
    for r in replicas:
        h = r.occupancy
        charges: Counter[int] = Counter()
        by_class: Counter[tuple[int, str]] = Counter()
        for role in h.roles:
            class_name = pool_class.get((h.cluster, role.pool))
            if class_name is None:
                continue
            if class_name not in covering:
                covering[class_name] = tuple(limit for limit in quota.limits if covers(limit, class_name))
            for limit in covering[class_name]:
                charges[limit.index] += role.footprint.total_gpus
                by_class[limit.index, class_name] += role.footprint.total_gpus
        if charges:
            out.append(_Charged(r, charges, by_class))
    return out


def _limit(quota: Quota, index: int) -> int:
    return quota.limits[index].accelerators


def _below(serving: Iterable[_Charged], index: int, priority: int) -> int:
    """What serving replicas of a priority below ``priority`` hold under limit ``index``."""
    return sum(c.charges.get(index, 0) for c in serving if c.replica.occupancy.priority < priority)


def _preempted(quota: Quota, serving: Iterable[_Charged]) -> list[str]:
    """The serving replicas beyond a limit that serving replicas of a higher priority fill (step 2).

    Only a higher priority preempts: serving replicas beyond a limit lowered under them all stay.
    """
    packed: Counter[int] = Counter()
    top: dict[int, int] = {}  # per limit, the highest priority packed
    out = []
    for c in serving:
        priority = c.replica.occupancy.priority
        beyond = [i for i, n in c.charges.items() if packed[i] + n > _limit(quota, i)]
        if any(top.get(i, priority) > priority for i in beyond):
            out.append(c.replica.key)
            continue
        packed.update(c.charges)
        for i in c.charges:
            top.setdefault(i, priority)
    return out


def _limit_use(limit: Limit, counted: Iterable[_Charged]) -> LimitUse:
    classes: Counter[str] = Counter()
    priorities: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
    deployments: Counter[str] = Counter()
    total = 0
    for c in counted:
        n = c.charges.get(limit.index, 0)
        if not n:
            continue
        h = c.replica.occupancy
        total += n
        for (i, class_name), m in c.by_class.items():
            if i == limit.index:
                classes[class_name] += m
        entry = priorities[h.priority, h.priority_class]
        entry[0] += n
        if not h.ready:
            entry[1] += n
        if h.deployment is not None:
            deployments[_name(h.deployment)] += n
    return LimitUse(
        limit,
        total,
        dict(sorted(classes.items())),
        {k: (v[0], v[1]) for k, v in sorted(priorities.items(), key=lambda i: (-i[0][0], i[0][1]))},
        dict(sorted(deployments.items())),
    )


def _name(key: DeploymentKey) -> str:
    return f"{key.namespace}/{key.name}"
