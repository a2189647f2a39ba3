"""What an InferenceCluster publishes in ``status.capacity``, from its summary (``modelplane.capacity.summary``).

One layout, written by ``compose-inference-cluster`` and by the preview's simulation of a live
cluster alike, and read back by every ModelDeployment through ``modelplane.scheduling.view``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from modelplane.capacity.clusters import PoolInfo
from modelplane.capacity.nodes import NodeFree
from modelplane.capacity.observed import Source
from modelplane.capacity.summary import ClusterSummary
from modelplane.classes import review_class
from modelplane.pricing import NO_CLASS_PRICE, ClassPrice, ClusterPrice, amount, class_price, price_per_gpu_hour
from modelplane_models.inference_class import InferenceClass


@dataclass(frozen=True)
class PoolClass:
    """What capacity needs of a pool's class."""

    per_node: int
    memory: str | None
    device_class: str | None
    price: ClassPrice = NO_CLASS_PRICE


def pool_classes(specs: Mapping[str, InferenceClass]) -> dict[str, PoolClass]:
    """What capacity needs of each class that has an accelerator, by name."""
    out: dict[str, PoolClass] = {}
    for name, klass in sorted(specs.items()):
        accelerator = review_class(klass.spec).accelerator if klass.spec is not None else None
        if accelerator is None:
            continue
        device = next((d for d in klass.spec.devices if d.name == accelerator.device), None) if klass.spec else None
        cost = klass.spec.cost if klass.spec is not None else None
        price = class_price(
            cost.perGPUHour if cost else None,
            cost.currency if cost else None,
            klass.spec.powerWatts if klass.spec is not None else None,
        )
        out[name] = PoolClass(
            accelerator.count_per_node, accelerator.memory, device.deviceClassName if device else None, price
        )
    return out


def capacity_status(
    pools: Sequence[PoolInfo], classes: Mapping[str, PoolClass], summary: ClusterSummary
) -> dict[str, Any]:
    """``status.capacity``: per pool in spec order, and in total; the replicas that do not fit, those that give way."""
    out: list[dict[str, Any]] = []
    totals = {"declared": 0, "inUse": 0, "free": 0}
    for pool in pools:
        entry: dict[str, Any] = {"name": pool.name, "className": pool.class_name, "nodes": pool.nodes}
        klass, summed = classes.get(pool.class_name), summary.pools.get(pool.name)
        if klass is None or summed is None:
            out.append({**entry, "source": str(Source.DECLARED)})
            continue
        entry["devicesPerNode"] = klass.per_node
        if klass.memory:
            entry["deviceMemory"] = klass.memory
        declared = summed.nodes * summed.per_node
        free = summed.node_free.free
        figures = {"declared": declared, "inUse": declared - free, "free": free}
        entry["nodesByFree"] = _by_free(summed.node_free)
        if summed.preemptible:
            entry["preemptible"] = [{"priority": q, "nodesByFree": _by_free(n)} for q, n in summed.preemptible]
        if summed.preemptible_serving:
            entry["preemptibleServing"] = [
                {"priority": q, "nodesByFree": _by_free(n)} for q, n in summed.preemptible_serving
            ]
        if summed.counted:
            entry["replicas"] = list(summed.counted)
        if summed.overflow:
            entry["overcommitted"] = summed.overflow
        source = summed.observed.source if summed.observed is not None else Source.DECLARED
        if summed.observed is not None:
            entry["observedInUse"] = summed.observed.in_use
        out.append({**entry, **figures, "source": str(source)})
        for k, v in figures.items():
            totals[k] += v
    overcommitted = {"overcommitted": list(summary.overcommitted)} if summary.overcommitted else {}
    preempted = {"preempted": [{"replica": v, "by": by} for v, by in summary.preempted]} if summary.preempted else {}
    return {**totals, "pools": out, **overcommitted, **preempted}


def _by_free(nodes: NodeFree) -> dict[str, int]:
    """``nodesByFree``: how many nodes have each number of free accelerators, most free first (none: left out)."""
    counts = nodes.counts
    return {str(f): counts[f] for f in range(len(counts) - 1, -1, -1) if counts[f]}


def cost_status(
    pools: Sequence[PoolInfo], classes: Mapping[str, PoolClass], summary: ClusterSummary, cluster: ClusterPrice
) -> dict[str, Any] | None:
    """``status.cost``: what the replicas counted on each pool cost per hour at its class's price and ``cluster``'s.

    None when no pool holding accelerators, or no pool at all, has a price, or the priced pools' classes mix currencies.
    """
    total = Decimal(0)
    currencies: set[str] = set()
    priced = False
    unpriced = 0
    for pool in pools:
        klass, summed = classes.get(pool.class_name), summary.pools.get(pool.name)
        price = price_per_gpu_hour(klass.price, cluster) if klass is not None else None
        held = summed.held if summed is not None else 0
        if price is None or klass is None:
            unpriced += held
            continue
        priced = True
        currencies.add(klass.price.currency)
        total += price * held
    if not priced or len(currencies) != 1:
        return None
    out: dict[str, Any] = {"perHour": amount(total), "currency": next(iter(currencies))}
    if unpriced:
        out["unpricedGPUs"] = unpriced
    return out
