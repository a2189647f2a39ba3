"""What the platform team says accelerators cost and emit: a class's price and power, a cluster's factors.

An InferenceClass may carry ``spec.cost`` (``perGPUHour``, ``currency``) and ``spec.powerWatts``;
an InferenceCluster ``spec.cost.multiplier`` (default 1) and ``spec.carbon.gramsCO2PerKWh``. A
pool's figures per accelerator-hour are its class's times its cluster's:

- price: ``perGPUHour x multiplier`` in the class's currency;
- emissions: ``powerWatts / 1000 x gramsCO2PerKWh`` grams (700 W when the class says nothing).

Decimals are read exactly (``decimal.Decimal``), so equal prices compare equal and a sum is the
same whatever the order. A figure that does not read (admission refuses it; a rendered file may
not) is no figure: the pool is unpriced, and ``problem`` names the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from modelplane.problems import Problem

DEFAULT_POWER_WATTS = 700
"""Watts one accelerator draws when its class does not say (an H100 SXM's rated power)."""

_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,8})(\.[0-9]{1,6})?")
_CURRENCY = re.compile(r"[A-Z]{3}")
_ONE = Decimal(1)
_KILO = Decimal(1000)


def decimal_of(text: str | None) -> Decimal | None:
    """A non-negative decimal of at most 6 places as the XRDs admit it (``"4.10"``); None when absent or not one."""
    if text is None or _DECIMAL.fullmatch(text) is None:
        return None
    return Decimal(text)


@dataclass(frozen=True)
class ClassPrice:
    """What one accelerator of a class costs and draws.

    Attributes:
        per_gpu_hour: ``spec.cost.perGPUHour``; None when the class has no cost (or it does not read).
        currency: ``spec.cost.currency`` ("" without a cost).
        watts: ``spec.powerWatts``, or ``DEFAULT_POWER_WATTS``.
        problem: Why the cost does not read, naming the field (None when it does or is absent).
    """

    per_gpu_hour: Decimal | None = None
    currency: str = ""
    watts: int = DEFAULT_POWER_WATTS
    problem: Problem | None = None


@dataclass(frozen=True)
class ClusterPrice:
    """How a cluster prices its accelerators against their classes, and its electricity's carbon intensity.

    Attributes:
        multiplier: ``spec.cost.multiplier`` (1 when unset); None when it does not read: the cluster is unpriced.
        grams_per_kwh: ``spec.carbon.gramsCO2PerKWh``; None when the cluster does not say.
        problem: Why the multiplier does not read, naming the field (None when it does).
    """

    multiplier: Decimal | None = _ONE
    grams_per_kwh: int | None = None
    problem: Problem | None = None


NO_CLASS_PRICE = ClassPrice()
NO_CLUSTER_PRICE = ClusterPrice()


def class_price(per_gpu_hour: str | None, currency: str | None, watts: int | None) -> ClassPrice:
    """A class's price from ``spec.cost.perGPUHour``, ``spec.cost.currency`` and ``spec.powerWatts``."""
    power = watts if watts is not None and watts > 0 else DEFAULT_POWER_WATTS
    if per_gpu_hour is None and currency is None:
        return ClassPrice(watts=power)
    price = decimal_of(per_gpu_hour)
    if price is None:
        problem = Problem("spec.cost.perGPUHour", f"{per_gpu_hour!r} is not a non-negative decimal such as 4.10")
        return ClassPrice(watts=power, problem=problem)
    if currency is None or _CURRENCY.fullmatch(currency) is None:
        problem = Problem("spec.cost.currency", f"{currency!r} is not an ISO 4217 code such as USD")
        return ClassPrice(watts=power, problem=problem)
    return ClassPrice(price, currency, power)


def cluster_price(multiplier: str | None, grams_per_kwh: int | None) -> ClusterPrice:
    """A cluster's factors from ``spec.cost.multiplier`` and ``spec.carbon.gramsCO2PerKWh``."""
    carbon = grams_per_kwh if grams_per_kwh is not None and grams_per_kwh >= 0 else None
    if multiplier is None:
        return ClusterPrice(_ONE, carbon)
    factor = decimal_of(multiplier)
    if factor is None:
        problem = Problem("spec.cost.multiplier", f"{multiplier!r} is not a non-negative decimal such as 0.6")
        return ClusterPrice(None, carbon, problem)
    return ClusterPrice(factor, carbon)


def price_per_gpu_hour(klass: ClassPrice, cluster: ClusterPrice) -> Decimal | None:
    """One accelerator-hour's price on a pool of ``klass`` on ``cluster``; None when either lacks its figure."""
    if klass.per_gpu_hour is None or cluster.multiplier is None:
        return None
    return klass.per_gpu_hour * cluster.multiplier


def grams_per_gpu_hour(klass: ClassPrice, cluster: ClusterPrice) -> Decimal | None:
    """Grams of CO2 one accelerator-hour emits on a pool of ``klass`` on ``cluster``; None without a carbon figure."""
    if cluster.grams_per_kwh is None:
        return None
    return Decimal(klass.watts) * cluster.grams_per_kwh / _KILO


def amount(value: Decimal, *, places: int = 2) -> str:
    """A sum as status shows it: exact, with at least ``places`` decimals (``"32.80"``, ``"0.7025"``, ``"5600"``)."""
    text = f"{value.normalize():f}"
    whole, _, fraction = text.partition(".")
    fraction = fraction.ljust(places, "0")
    return f"{whole}.{fraction}" if fraction else whole
