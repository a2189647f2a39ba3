"""An InferenceCluster as capacity and scheduling read it, parsed once.

Callers with many clusters may build ``ClusterInfo`` straight from their own
representation (e.g. a protobuf Struct) instead of validating whole models.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from modelplane.capacity.observed import Observed, observed_usage
from modelplane.pricing import NO_CLUSTER_PRICE, ClusterPrice, cluster_price
from modelplane.readiness import entry_of, readiness
from modelplane.stack.modes import Mode, NeededBy
from modelplane_models.inference_cluster import ComponentStatus, InferenceCluster


@dataclass(frozen=True)
class Lacking:
    """A serving-stack component a cluster does not have ready, and which replicas need it.

    Attributes:
        component: The component (``status.components[].name``, e.g. ``scheduler``).
        mode: Its mode (Managed, Existing or Disabled; "" when not said).
        needed_by: Which replicas cannot run without it.
        why: What is missing, as the stack says it ("" when it does not say).
    """

    component: str
    mode: str
    needed_by: NeededBy
    why: str = ""


def lacks(mode: str | None, needed_by: str | None, *, ready: bool | None) -> bool:
    """Whether a ``status.components`` entry is a component the cluster lacks and some replicas need.

    Existing and not found, or Disabled. A Managed component not ready yet is the stack still
    installing: the cluster is not Ready then, and its readiness is what keeps replicas off.
    """
    return mode in (Mode.EXISTING, Mode.DISABLED) and ready is not True and needed_by not in (None, NeededBy.NONE)


def lacking_components(entries: Iterable[ComponentStatus]) -> tuple[Lacking, ...]:
    """The components of ``status.components`` the cluster lacks and some replicas need, by name."""
    out = [
        Lacking(e.name, e.mode or "", NeededBy(e.neededBy), e.message or "")
        for e in entries
        if e.name and e.neededBy is not None and lacks(e.mode, e.neededBy, ready=e.ready)
    ]
    return tuple(sorted(out, key=lambda g: g.component))


@dataclass(frozen=True)
class PoolInfo:
    """One node pool of a cluster.

    Attributes:
        name: The pool's name.
        class_name: Its InferenceClass.
        nodes: Its nodes: ``maxNodeCount`` when set (the autoscaler may grow it that
            far), else ``nodeCount``.
        observed: GPUs in use reported by the cluster's scheduler, if any.
    """

    name: str
    class_name: str
    nodes: int
    observed: Observed | None = None


@dataclass(frozen=True)
class ClusterInfo:
    """One InferenceCluster.

    Attributes:
        name: The cluster's name.
        labels: Its labels (what ``clusterSelector`` matches).
        cordoned: ``spec.cordoned``: it takes no new replicas.
        ready: Whether its ``Ready`` condition is True.
        not_ready: Why it is not Ready ("" when it is).
        pools: Its node pools, in spec order.
        draining: ``spec.drain``: it takes no new replicas and its replicas move away.
        deleting: It is being deleted (``metadata.deletionTimestamp``): as draining, by the user's act.
        not_ready_since: When its Ready condition last left True (``lastTransitionTime`` as
            written, RFC 3339), "" when it is Ready or the time is not known.
        price: ``spec.cost.multiplier`` and ``spec.carbon.gramsCO2PerKWh``.
        removing: Pools taken out of ``spec.nodePools`` that its function keeps while ModelReplicas
            run on them (``status.removingPools``): each drains, as the cluster does with ``spec.drain``.
        removing_classes: The class of each removing pool whose entry gives one (``className``, as the
            cluster last published it), (pool, class) sorted: what runs there still counts against a
            FleetQuota of that class until it has moved.
        lacking: Serving-stack components it does not have ready that some replicas need
            (``status.components``): such replicas are not placed here.
    """

    name: str
    labels: Mapping[str, str]
    cordoned: bool
    ready: bool
    not_ready: str
    pools: tuple[PoolInfo, ...]
    draining: bool = False
    deleting: bool = False
    not_ready_since: str = ""
    price: ClusterPrice = NO_CLUSTER_PRICE
    removing: frozenset[str] = frozenset()
    lacking: tuple[Lacking, ...] = ()
    removing_classes: tuple[tuple[str, str], ...] = ()

    @property
    def schedulable(self) -> bool:
        """Whether it takes new replicas: not being deleted, not draining, not cordoned, Ready."""
        return self.ready and not (self.cordoned or self.draining or self.deleting)


def cluster_info(cluster: InferenceCluster) -> ClusterInfo | None:
    """Read an InferenceCluster; None when it has no name or spec.

    A cluster without a ``Ready`` condition (no status yet, e.g. still being
    provisioned) is not Ready.
    """
    if cluster.metadata is None or not cluster.metadata.name or cluster.spec is None:
        return None
    conditions = (cluster.status.conditions or []) if cluster.status is not None else []
    # Whether the cluster is up: a Ready condition from before its latest spec change still says so.
    verdict = cluster.status.readyVerdict if cluster.status is not None else None
    ready = readiness([entry_of(c) for c in conditions], cluster.metadata.generation, verdict=verdict)
    not_ready = ready.why_not()
    since = ready.since if not_ready else ""
    observed = observed_usage(cluster)
    listed = (cluster.status.removingPools or []) if cluster.status is not None else []
    removing = [p.name for p in listed]
    pools = tuple(
        PoolInfo(
            p.name,
            p.className,
            p.maxNodeCount if p.maxNodeCount is not None else p.nodeCount,
            observed.get(p.name),
        )
        for p in cluster.spec.nodePools or []
    )
    return ClusterInfo(
        name=cluster.metadata.name,
        labels=cluster.metadata.labels or {},
        cordoned=bool(cluster.spec.cordoned),
        ready=not not_ready,
        not_ready=not_ready,
        pools=pools,
        draining=bool(cluster.spec.drain),
        not_ready_since=since,
        price=cluster_price(
            cluster.spec.cost.multiplier if cluster.spec.cost is not None else None,
            cluster.spec.carbon.gramsCO2PerKWh if cluster.spec.carbon is not None else None,
        ),
        removing=removing_pools(removing, (p.name for p in pools)),
        lacking=lacking_components(cluster.status.components or []) if cluster.status is not None else (),
        removing_classes=removing_classes(((p.name, p.className or "") for p in listed), (p.name for p in pools)),
    )


def removing_pools(listed: Iterable[str], in_spec: Iterable[str]) -> frozenset[str]:
    """The pools ``status.removingPools`` lists that are not back in ``spec.nodePools`` (a re-added pool serves)."""
    return frozenset(listed) - frozenset(in_spec)


def removing_classes(listed: Iterable[tuple[str, str]], in_spec: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(pool, class) of each removing pool (``removing_pools``) whose entry names its class, sorted."""
    back = frozenset(in_spec)
    return tuple(sorted({(pool, klass) for pool, klass in listed if pool and klass and pool not in back}))
