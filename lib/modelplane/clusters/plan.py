"""Match node pools with their classes' provisioning blocks, and the table of cloud builders."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.clusters import aks, eks, gke
from modelplane.clusters.types import CloudCluster, PoolPlan
from modelplane_models.inference_cluster import NodePool

Builder = Callable[[str, str, Mapping[str, Any], Sequence[PoolPlan]], CloudCluster]

# spec.cluster.source -> the class's provisioning block and the cluster's settings block.
PROVIDER_BLOCKS: dict[str, str] = {"GKE": "gke", "EKS": "eks", "AKS": "aks"}
BUILDERS: dict[str, Builder] = {"GKE": gke.compose, "EKS": eks.compose, "AKS": aks.compose}


@dataclass(frozen=True)
class PoolProblem:
    """Why a pool cannot be provisioned.

    Attributes:
        pool: The pool's name.
        reason: ``ClassNotFound`` or ``NoProvisioningBlock``.
        message: What is wrong, naming the field.
    """

    pool: str
    reason: str
    message: str


def plan_pools(
    source: str, node_pools: Sequence[NodePool], classes: Mapping[str, Mapping[str, Any]]
) -> tuple[list[PoolPlan], list[PoolProblem]]:
    """Match each pool with its class's provisioning block for ``source``.

    Args:
        source: ``spec.cluster.source`` (GKE, EKS or AKS).
        node_pools: ``spec.nodePools``.
        classes: Every InferenceClass's spec as written, by name (the builders copy its provisioning block).

    Returns:
        The pools that can be provisioned, in spec order, and a problem for each that cannot.
    """
    block = PROVIDER_BLOCKS[source]
    plans: list[PoolPlan] = []
    problems: list[PoolProblem] = []
    for index, pool in enumerate(node_pools):
        name, class_name = pool.name, pool.className
        spec = classes.get(class_name)
        at = f"spec.nodePools[{index}].className"
        if spec is None:
            problems.append(PoolProblem(name, "ClassNotFound", f"{at}: InferenceClass {class_name!r} not found"))
            continue
        provisioning = spec.get("provisioning") or {}
        shape = provisioning.get(block)
        if provisioning.get("provider") != source or not isinstance(shape, Mapping):
            has = (
                f"provisions for {provisioning['provider']}"
                if provisioning.get("provider")
                else "has no provisioning block"
            )
            problems.append(
                PoolProblem(
                    name,
                    "NoProvisioningBlock",
                    f"{at}: InferenceClass {class_name!r} {has}, not provisioning.{block} for this {source} cluster",
                )
            )
            continue
        plans.append(
            PoolPlan(
                name=name,
                class_name=class_name,
                nodes=pool.nodeCount,
                min_nodes=pool.minNodeCount,
                max_nodes=pool.maxNodeCount,
                zones=tuple(z.root for z in pool.zones or ()),
                shape=shape,
            )
        )
    return plans, problems


def compose_cloud(
    source: str, *, name: str, namespace: str, settings: Mapping[str, Any], pools: Sequence[PoolPlan]
) -> CloudCluster:
    """The managed resources of a ``source`` cluster (see ``BUILDERS``).

    Raises:
        KeyError: ``source`` is not a cloud (e.g. Existing).
    """
    return BUILDERS[source](name, namespace, settings, pools)
