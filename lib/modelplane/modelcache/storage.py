"""Whether a cache's size fits the storage class its claim gets on a cluster (``spec.storageClasses``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from modelplane.cel.k8s import QuantityError, exact, parse_quantity
from modelplane.modelcache.work import CacheWork, StorageType


@dataclass(frozen=True)
class StorageClass:
    """One entry of an InferenceCluster's ``spec.storageClasses``.

    Attributes:
        name: The StorageClass's name on the cluster.
        max_size: The largest volume it provisions, a Kubernetes quantity as written.
        default: Whether a claim that names no class gets it.
    """

    name: str
    max_size: str
    default: bool = False


def size_exceeds(work: CacheWork, cluster: str, classes: Sequence[StorageClass]) -> str | None:
    """Why the cache's claim on ``cluster`` cannot be provisioned at its size; None when it fits or is not known.

    The class is ``work.storage_class``, or the entry marked default when the cache names none.
    Nothing is known, so nothing is refused, when that class is not listed, when no entry (or,
    past admission, more than one) is the default, or when a size does not parse (or, past
    admission, the limit is 0). Storage type
    NodeLocal is never checked here: its KServe node group is the cache's own, with a storage
    limit of exactly ``spec.size``, and its volume is a node's local disk, of no listed class.

    Args:
        work: The cache as resolved (``spec.size`` and ``spec.storage``).
        cluster: The InferenceCluster's name, for the message.
        classes: The cluster's ``spec.storageClasses``.

    Returns:
        A message naming ``spec.size`` and the cluster's ``maxSize`` it exceeds, or None.
    """
    if work.storage != StorageType.PVC:
        return None
    if work.storage_class:
        named = [c for c in classes if c.name == work.storage_class]
        how = ""
    else:
        named = [c for c in classes if c.default]
        how = " (the default: spec.storage.pvc.storageClassName is unset)"
    if len(named) != 1:
        return None
    (chosen,) = named
    size, limit = _value(work.size), _value(chosen.max_size)
    if size is None or limit is None or limit <= 0 or size <= limit:
        return None
    return (
        f"spec.size: {work.size} exceeds the {chosen.max_size} that storage class {chosen.name}{how} "
        f"on InferenceCluster {cluster} can provision (spec.storageClasses[{chosen.name}].maxSize)"
    )


def _value(quantity: str) -> Fraction | None:
    try:
        return exact(parse_quantity(quantity))
    except QuantityError:
        return None
