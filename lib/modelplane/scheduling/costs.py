"""What a deployment's replicas cost and emit: the objective a strategy places by, and the sums status shows.

A pool's figure per accelerator-hour is its class's times its cluster's (``modelplane.pricing``):
the price for ``CostOptimized``, the emissions for ``CarbonAware``. ``objective_of``:

1. collects the figure of every pool of the clusters the deployment's selector admits (its candidates);
2. falls back to Spread, saying why and naming the field, when no candidate has the figure or, for
   the price, the candidates' classes mix currencies;
3. otherwise gives the ``Objective``: per pool its rate, and how to say it.

``spend_of`` sums what the placed replicas cost and emit, for ``status.cost`` and ``status.carbon``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from modelplane.capacity import PoolKey
from modelplane.capacity.clusters import ClusterInfo
from modelplane.pricing import amount, grams_per_gpu_hour, price_per_gpu_hour
from modelplane.scheduling.decision import DecidedBy
from modelplane.scheduling.devices import ClassView
from modelplane.scheduling.labels import LabelSelector
from modelplane.scheduling.placement import Placement
from modelplane.scheduling.policy import PlacementStrategy, Policy
from modelplane.topology import Footprint

_ZERO = Decimal(0)


@dataclass(frozen=True)
class Objective:
    """What placing minimises first: per pool, what one of its accelerators costs (or emits) per hour.

    Attributes:
        decided_by: ``Cost`` or ``Carbon``: what a placement it decides records.
        unit: How a figure is said, e.g. ``USD/h`` or ``gCO2/h``.
        rates: Per pool with the figure, per accelerator-hour; a pool without one comes after every pool with one.
    """

    decided_by: DecidedBy
    unit: str
    rates: Mapping[PoolKey, Decimal]

    def of(self, roles: Iterable[tuple[PoolKey, Footprint]]) -> Decimal | None:
        """A replica's figure per hour: each role's accelerators at its pool's rate; None when a pool has none."""
        total = _ZERO
        for key, fp in roles:
            rate = self.rates.get(key)
            if rate is None:
                return None
            total += rate * fp.total_gpus
        return total

    def say(self, value: Decimal | None) -> str:
        """A figure with its unit, e.g. ``8.20 USD/h``; ``unpriced`` for None."""
        if value is None:
            return "unpriced"
        return f"{amount(value, places=0 if self.decided_by is DecidedBy.CARBON else 2)} {self.unit}"


class StrategyReason(StrEnum):
    """Why a deployment is placed by the strategy it is (the ``PlacementStrategy`` condition's reason)."""

    COST_OPTIMIZED = "CostOptimized"
    CARBON_AWARE = "CarbonAware"
    NO_COST_DATA = "NoCostData"
    MIXED_CURRENCIES = "MixedCurrencies"
    NO_CARBON_DATA = "NoCarbonData"


@dataclass(frozen=True)
class StrategyNote:
    """Whether ``spec.placement.strategy`` applies, and if not which field is missing and what is used instead."""

    applied: bool
    reason: StrategyReason
    message: str


@dataclass(frozen=True)
class Resolved:
    """A policy resolved against the fleet: the objective to place by (None: Spread), and what to say of it."""

    objective: Objective | None = None
    note: StrategyNote | None = None


def objective_of(
    policy: Policy, selector: LabelSelector, clusters: Mapping[str, ClusterInfo], classes: Mapping[str, ClassView]
) -> Resolved:
    """Resolve ``policy``'s strategy against the candidates ``selector`` admits (see the module's steps)."""
    if policy.strategy is PlacementStrategy.SPREAD:
        return Resolved()
    carbon = policy.strategy is PlacementStrategy.CARBON_AWARE
    # 1. Every candidate pool's figure.
    rates: dict[PoolKey, Decimal] = {}
    currencies: dict[str, list[str]] = {}
    pools = 0
    for cluster in clusters.values():
        if not selector.matches(cluster.labels):
            continue
        for pool in cluster.pools:
            view = classes.get(pool.class_name)
            if view is None:
                continue
            pools += 1
            price = view.price
            rate = grams_per_gpu_hour(price, cluster.price) if carbon else price_per_gpu_hour(price, cluster.price)
            if rate is None:
                continue
            rates[cluster.name, pool.name] = rate
            if not carbon:
                currencies.setdefault(price.currency, []).append(view.name)
    # 2. Nothing to place by: Spread, naming the field.
    if not rates:
        if carbon:
            message = "no candidate InferenceCluster has spec.carbon.gramsCO2PerKWh: placed by Spread"
            return Resolved(note=StrategyNote(applied=False, reason=StrategyReason.NO_CARBON_DATA, message=message))
        message = (
            "no candidate pool's InferenceClass has spec.cost"
            " (or its cluster's spec.cost.multiplier does not read): placed by Spread"
        )
        return Resolved(note=StrategyNote(applied=False, reason=StrategyReason.NO_COST_DATA, message=message))
    if len(currencies) > 1:
        mixed = "; ".join(f"{c} ({', '.join(sorted(set(n)))})" for c, n in sorted(currencies.items()))
        message = f"the candidate pools' InferenceClass spec.cost.currency differ: {mixed}: placed by Spread"
        return Resolved(note=StrategyNote(applied=False, reason=StrategyReason.MIXED_CURRENCIES, message=message))
    # 3. The objective.
    unrated = f"; {pools - len(rates)} of {pools} candidate pools without it come last" if len(rates) < pools else ""
    if carbon:
        objective = Objective(DecidedBy.CARBON, "gCO2/h", rates)
        message = f"new replicas go where their accelerators emit least per hour{unrated}"
        return Resolved(objective, StrategyNote(applied=True, reason=StrategyReason.CARBON_AWARE, message=message))
    (currency,) = currencies
    objective = Objective(DecidedBy.COST, f"{currency}/h", rates)
    message = f"new replicas go where their accelerators cost least per hour ({currency}){unrated}"
    return Resolved(objective, StrategyNote(applied=True, reason=StrategyReason.COST_OPTIMIZED, message=message))


@dataclass(frozen=True)
class Spend:
    """What placed replicas cost and emit per hour (``status.cost``, ``status.carbon``).

    Attributes:
        per_hour: Their price per hour; None when none is priced or their currencies differ.
        currency: Its currency.
        unpriced: Replicas left out of ``per_hour`` (a pool without a price).
        grams_per_hour: Their emissions per hour; None when no cluster of theirs says its carbon intensity.
        unrated: Replicas left out of ``grams_per_hour``.
    """

    per_hour: Decimal | None = None
    currency: str = ""
    unpriced: int = 0
    grams_per_hour: Decimal | None = None
    unrated: int = 0

    def status(self) -> dict[str, dict[str, str | int]]:
        """``status.cost`` and ``status.carbon``, each only when there is a figure."""
        out: dict[str, dict[str, str | int]] = {}
        if self.per_hour is not None:
            cost: dict[str, str | int] = {"perHour": amount(self.per_hour), "currency": self.currency}
            if self.unpriced:
                cost["unpricedReplicas"] = self.unpriced
            out["cost"] = cost
        if self.grams_per_hour is not None:
            carbon: dict[str, str | int] = {"gramsCO2PerHour": amount(self.grams_per_hour, places=0)}
            if self.unrated:
                carbon["unpricedReplicas"] = self.unrated
            out["carbon"] = carbon
        return out


def spend_of(
    placements: Iterable[Placement], clusters: Mapping[str, ClusterInfo], classes: Mapping[str, ClassView]
) -> Spend:
    """What ``placements`` cost and emit per hour, each role's accelerators at its pool's figures."""
    prices: dict[str, Decimal] = {}
    grams = _ZERO
    placed = rated = 0
    unpriced = 0
    for p in placements:
        placed += 1
        cluster = clusters.get(p.cluster)
        cost: Decimal | None = _ZERO
        emitted: Decimal | None = _ZERO
        currency = ""
        for role in p.roles:
            view = _class_of(cluster, role.pool, classes)
            if cluster is None or view is None:
                cost = emitted = None
                break
            price = price_per_gpu_hour(view.price, cluster.price)
            if price is None or (currency and currency != view.price.currency):
                cost = None
            elif cost is not None:
                cost += price * role.footprint.total_gpus
                currency = view.price.currency
            rate = grams_per_gpu_hour(view.price, cluster.price)
            emitted = None if rate is None or emitted is None else emitted + rate * role.footprint.total_gpus
        if cost is None:
            unpriced += 1
        else:
            prices[currency] = prices.get(currency, _ZERO) + cost
        if emitted is not None:
            rated += 1
            grams += emitted
    per_hour, currency = (prices[next(iter(prices))], next(iter(prices))) if len(prices) == 1 else (None, "")
    return Spend(
        per_hour=per_hour,
        currency=currency,
        unpriced=unpriced if per_hour is not None else 0,
        grams_per_hour=grams if rated else None,
        unrated=placed - rated if rated else 0,
    )


def _class_of(cluster: ClusterInfo | None, pool: str, classes: Mapping[str, ClassView]) -> ClassView | None:
    if cluster is None:
        return None
    found = next((p for p in cluster.pools if p.name == pool), None)
    return classes.get(found.class_name) if found is not None else None
