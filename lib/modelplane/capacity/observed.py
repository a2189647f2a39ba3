"""Observed capacity figures from an InferenceCluster's status.

``compose-inference-cluster`` writes ``status.capacity.pools[]``; when the
cluster has a scheduler (KAI or Kueue), ``observedInUse`` there is what that
scheduler observed (a status written before that field, without ``nodesByFree``,
had the figure in ``inUse``). Adapters that read KAI Queues or Kueue ClusterQueues directly belong
beside this module (one per scheduler) and return the same ``Observed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from modelplane_models.inference_cluster import InferenceCluster


class Source(StrEnum):
    """Where a pool's figure of GPUs in use comes from."""

    DECLARED = "Declared"
    KAI = "KAI"
    KUEUE = "Kueue"


@dataclass(frozen=True)
class Observed:
    """GPUs of one pool a cluster scheduler reports in use."""

    source: Source
    in_use: int


def observed_usage(cluster: InferenceCluster) -> dict[str, Observed]:
    """The observed usage of each pool of a cluster, by pool name.

    Only figures from a scheduler (source KAI or Kueue) count: a Declared
    figure is derived from ModelReplicas, which capacity counts itself. A
    status entry whose class differs from the pool's spec is stale and ignored.

    Args:
        cluster: The InferenceCluster as observed.

    Returns:
        Observed usage per pool name; pools without an observed figure are absent.
    """
    status = cluster.status
    if status is None or status.capacity is None or not status.capacity.pools:
        return {}
    classes = {p.name: p.className for p in (cluster.spec.nodePools or [])} if cluster.spec is not None else {}
    observed: dict[str, Observed] = {}
    for pool in status.capacity.pools:
        figure = observed_figure(pool.observedInUse, pool.inUse, summarized=pool.nodesByFree is not None)
        if pool.name is None or figure is None or pool.source in (None, Source.DECLARED):
            continue
        if pool.name not in classes or (pool.className is not None and pool.className != classes[pool.name]):
            continue
        observed.setdefault(pool.name, Observed(Source(pool.source), max(0, figure)))
    return observed


def observed_figure(observed_in_use: int | None, in_use: int | None, *, summarized: bool) -> int | None:
    """A pool's scheduler figure: ``observedInUse``, or ``inUse`` of a status from before the summary."""
    if observed_in_use is not None:
        return observed_in_use
    return None if summarized else in_use
