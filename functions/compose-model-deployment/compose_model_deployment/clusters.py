"""An InferenceCluster as the scheduler reads it, straight from its protobuf Struct.

What a ModelDeployment needs of a cluster: its facts (labels, cordoned, draining, being
deleted, Ready and since when, its cost multiplier and carbon intensity), its pools and those
being removed (``status.removingPools``), the usage its scheduler observes,
and what its own function publishes per pool (free accelerators per node and the
replicas counted) and found overcommitted. Every field read is checked as
``InferenceCluster``'s model checks it, with the model's own bounds; a cluster that
does not read cleanly goes through the model (``modelplane.fnkit.inputs.read_one``),
which gives its facts and no summary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TypeVar

from modelplane.capacity import ClusterInfo, Observed, PoolInfo, Source
from modelplane.capacity.clusters import Lacking, lacks, removing_classes, removing_pools
from modelplane.capacity.observed import observed_figure
from modelplane.fnkit.structs import (
    Fields,
    UnclearError,
    Value,
    bounds,
    flag,
    labels,
    need,
    obj,
    objects,
    readiness_at,
    string,
    strings,
    text,
    whole,
)
from modelplane.memo import once
from modelplane.pricing import cluster_price
from modelplane.scheduling.view import ClusterFacts, Published, published_pool
from modelplane.scheduling.view import cluster_facts as cluster_facts_of
from modelplane.stack.modes import Mode, NeededBy
from modelplane_models.inference_cluster import (
    Carbon,
    Cost,
    InferenceCluster,
    NodePool,
    Pool,
    PreemptibleItem,
    Spec,
)

_SOURCES = frozenset(Source)
# What the model declares of the fields read here.
_NODE_POOLS = bounds(Spec, "nodePools")
_POOL_NAME, _CLASS_NAME = bounds(NodePool, "name"), bounds(NodePool, "className")
_NODE_COUNT, _MIN_NODES, _MAX_NODES = (bounds(NodePool, f) for f in ("nodeCount", "minNodeCount", "maxNodeCount"))
_PER_NODE, _OBSERVED_IN_USE, _IN_USE = (bounds(Pool, f) for f in ("devicesPerNode", "observedInUse", "inUse"))
_MULTIPLIER, _GRAMS = bounds(Cost, "multiplier"), bounds(Carbon, "gramsCO2PerKWh")
_PRIORITY = bounds(PreemptibleItem, "priority")


def cluster_facts(fields: Fields) -> ClusterFacts | None:
    """Read one InferenceCluster in place; None without a name or spec."""
    metadata, spec = obj(fields.get("metadata")), obj(fields.get("spec"))
    status = obj(fields.get("status"))
    name = text(metadata.get("name")) if metadata is not None else None
    found = labels(metadata.get("labels")) if metadata is not None else {}
    pools: list[tuple[str, str, int]] = []
    cordoned = drains = multiplier = grams = None
    if spec is not None:
        cordoned = flag(spec.get("cordoned"))
        drains = flag(spec.get("drain"))
        pools = _pools_once(spec.get("nodePools"))
        cost, carbon = obj(spec.get("cost")), obj(spec.get("carbon"))
        multiplier = string(cost.get("multiplier"), _MULTIPLIER) if cost is not None else None
        grams = need(whole(carbon.get("gramsCO2PerKWh"), _GRAMS)) if carbon is not None else None
    # Whether the cluster is up (``modelplane.capacity.cluster_info`` reads the model so).
    ready = readiness_at(fields, strict=True)
    not_ready = ready.why_not()
    since = ready.since if not_ready else ""
    observed, published = _capacity(status.get("capacity") if status is not None else None, pools)
    listed = [_removing_pool(p) for p in objects(status.get("removingPools"))] if status is not None else []
    removing = [name for name, _ in listed]
    capacity = obj(status.get("capacity")) if status is not None else None
    overcommitted = strings(capacity.get("overcommitted")) if capacity is not None else frozenset()
    preempted = _preempted(capacity.get("preempted")) if capacity is not None else {}
    lacking = _lacking_once(status.get("components")) if status is not None else ()
    if not name or spec is None:
        return None
    info = ClusterInfo(
        name=name,
        labels=found,
        cordoned=bool(cordoned),
        ready=not not_ready,
        not_ready=not_ready,
        pools=tuple(PoolInfo(n, c, nodes, observed.get(n)) for n, c, nodes in pools),
        draining=bool(drains),
        deleting=metadata is not None and _deleting(metadata),
        not_ready_since=since,
        price=cluster_price(multiplier, grams),
        removing=removing_pools(removing, (n for n, _, _ in pools)),
        lacking=lacking,
        removing_classes=removing_classes(listed, (n for n, _, _ in pools)),
    )
    return ClusterFacts(info, published, overcommitted, preempted)


def _preempted(value: Value) -> dict[str, str]:
    """``status.capacity.preempted[]``: each serving replica that gives way, with the replica that takes its place."""
    out: dict[str, str] = {}
    for item in objects(value):
        replica, by = text(item.get("replica")), text(item.get("by"))
        if replica and by:
            out.setdefault(replica, by)
    return out


def _removing_pool(entry: Fields) -> tuple[str, str]:
    """A ``status.removingPools[]`` entry as (name, class); its class counts its replicas for FleetQuotas."""
    need(whole(entry.get("remaining")))
    strings(entry.get("replicas"))
    return need(text(entry.get("name"))), text(entry.get("className")) or ""


def model_facts(cluster: InferenceCluster) -> ClusterFacts | None:
    """A cluster the fast read could not read, as its model reads it."""
    return cluster_facts_of(cluster)


def _node_pool(pool: Fields) -> tuple[str, str, int]:
    """A ``spec.nodePools[]`` entry as (name, class, nodes)."""
    name = need(string(pool.get("name"), _POOL_NAME))
    class_name = need(string(pool.get("className"), _CLASS_NAME))
    count = need(whole(pool.get("nodeCount"), _NODE_COUNT))
    whole(pool.get("minNodeCount"), _MIN_NODES)
    most = whole(pool.get("maxNodeCount"), _MAX_NODES)
    return name, class_name, most if most is not None else count


_Capacity = tuple[dict[str, Observed], dict[str, Published]]
_Entry = tuple[str | None, Observed | None, Published | None]
_Pools = list[tuple[str, str, int]]
# A fleet's clusters mostly declare and publish alike (idle pools of one size): each part is read
# once per distinct content, keyed by its bytes. The results are shared, read-only.
_ENTRIES: dict[tuple[bytes, tuple[tuple[str, str, int], ...]], _Entry] = {}
_POOLS: dict[bytes, _Pools] = {}
_LACKING: dict[bytes, tuple[Lacking, ...]] = {}
_ALIKE_LIMIT = 8192


def forget() -> None:
    """Forget the clusters' parts read so far (a cold read, for the bench)."""
    _ENTRIES.clear()
    _POOLS.clear()
    _LACKING.clear()


def _pools_once(value: Value) -> _Pools:
    """``spec.nodePools`` as (name, class, nodes), read once per distinct list."""
    if value is None or not value.HasField("list_value"):
        return [_node_pool(p) for p in objects(value, _NODE_POOLS)]
    return _once(_POOLS, value.SerializeToString(), lambda: [_node_pool(p) for p in objects(value, _NODE_POOLS)])


K = TypeVar("K")
V = TypeVar("V")


def _once(cache: dict[K, V], key: K, read: Callable[[], V]) -> V:
    """``read()``, or what it gave for ``key`` before (the cache starts again past ``_ALIKE_LIMIT``)."""
    return once(cache, key, read, _ALIKE_LIMIT)


def _capacity(value: Value, pools: _Pools) -> _Capacity:
    """Each pool's observed usage and published summary, from ``status.capacity.pools``.

    Read as ``modelplane.capacity.observed.observed_usage`` and ``modelplane.scheduling.view.published_pool``
    read the model's; each distinct entry once.
    """
    capacity = obj(value)
    listed = capacity.get("pools") if capacity is not None else None
    entries: Sequence[Value] = ()
    if listed is not None and listed.HasField("list_value"):
        entries = listed.list_value.values
    else:
        objects(listed)  # absent or null reads as no pools; anything else is unclear
    classes = {p[0]: p[1] for p in pools}
    spec = tuple(pools)
    observed: dict[str, Observed] = {}
    published: dict[str, Published] = {}
    for entry in entries:
        key = (entry.SerializeToString(), spec)
        name, seen, summary = _once(_ENTRIES, key, partial(_entry, entry, classes))
        if name is not None and seen is not None:
            observed.setdefault(name, seen)
        if name is not None and summary is not None:
            published.setdefault(name, summary)
    return observed, published


def _entry(value: Value, classes: Mapping[str, str]) -> _Entry:
    """One ``status.capacity.pools[]`` entry: its name, observed usage and published summary."""
    get = need(obj(value)).get
    name, source = text(get("name")), text(get("source"))
    by_free = obj(get("nodesByFree"))
    seen = None
    if source is not None and source != Source.DECLARED:  # Declared: derived from the replicas counted
        if source not in _SOURCES:
            raise UnclearError
        class_name = text(get("className"))
        in_use = observed_figure(
            whole(get("observedInUse"), _OBSERVED_IN_USE), whole(get("inUse"), _IN_USE), summarized=by_free is not None
        )
        if name is not None and in_use is not None and name in classes and class_name in (None, classes[name]):
            seen = Observed(Source(source), max(0, in_use))
    per_node = whole(get("devicesPerNode"), _PER_NODE)
    counts = {key: need(whole(value)) for key, value in by_free.items()} if by_free else by_free
    published = published_pool(per_node, counts, strings(get("replicas")))
    if published is None:
        return name, seen, None
    preemptible = _preemptible(per_node, get("preemptible"))
    return (
        name,
        seen,
        replace(published, preemptible=preemptible, serving=_preemptible(per_node, get("preemptibleServing"))),
    )


def _preemptible(per_node: int | None, value: Value) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """``preemptible[]`` (or ``preemptibleServing[]``): per priority, the free counts a replica above it finds."""
    out = []
    for item in objects(value):
        priority = whole(item.get("priority"), _PRIORITY)
        by_free = obj(item.get("nodesByFree"))
        counts = {key: need(whole(v)) for key, v in by_free.items()} if by_free else None
        deeper = published_pool(per_node, counts, ())
        if priority is not None and deeper is not None:
            out.append((priority, deeper.counts))
    return tuple(out)


_MODES = frozenset(Mode)
_NEEDED_BY = frozenset(NeededBy)


def _lacking_once(value: Value) -> tuple[Lacking, ...]:
    """``status.components`` read once per distinct list (a cluster's status changes mostly in its capacity)."""
    if value is None:
        return _lacking(value)
    return _once(_LACKING, value.SerializeToString(), partial(_lacking, value))


def _lacking(value: Value) -> tuple[Lacking, ...]:
    """``status.components`` as ``modelplane.capacity.clusters.lacking_components`` reads the model's."""
    out = []
    for entry in objects(value):
        name, mode, needed = text(entry.get("name")), text(entry.get("mode")), text(entry.get("neededBy"))
        ready, why = flag(entry.get("ready")), text(entry.get("message"))
        text(entry.get("version"))
        if (mode is not None and mode not in _MODES) or (needed is not None and needed not in _NEEDED_BY):
            raise UnclearError  # the model refuses it: let it say how
        if name and needed is not None and lacks(mode, needed, ready=ready):
            out.append(Lacking(name, mode or "", NeededBy(needed), why or ""))
    return tuple(sorted(out, key=lambda g: g.component))


def _deleting(metadata: Fields) -> bool:
    value = metadata.get("deletionTimestamp")
    return value is not None and value.WhichOneof("kind") not in (None, "null_value")
