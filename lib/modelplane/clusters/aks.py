"""AKS: a KubernetesCluster whose default pool is the system pool, one KubernetesClusterNodePool per pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.clusters.types import (
    EXTERNAL_NAME,
    SYSTEM_POOL,
    CloudCluster,
    Manifest,
    PoolPlan,
    managed,
)
from modelplane.names import CLOUD_CLUSTER_KEY, POOL_LABEL, bounded_name, kubeconfig_secret, pool_key

API_VERSION = "containerservice.azure.m.upbound.io/v1beta1"
SYSTEM_VM = "Standard_D4s_v5"
# AKS node pool names: lowercase letters and digits, at most 12 characters.
POOL_NAME_LIMIT = 12


def compose(name: str, namespace: str, settings: Mapping[str, Any], pools: Sequence[PoolPlan]) -> CloudCluster:
    """The AKS cluster ``name`` with its default (system) pool and ``pools``.

    Args:
        name: The InferenceCluster's name.
        namespace: The namespace of the managed resources.
        settings: ``spec.cluster.aks``.
        pools: The GPU pools.
    """
    subnet = settings.get("vnetSubnetId")
    system: Manifest = {
        "name": SYSTEM_POOL,
        "vmSize": SYSTEM_VM,
        "nodeCount": 2,
        "nodeLabels": {POOL_LABEL: SYSTEM_POOL},
    }
    if subnet:
        system["vnetSubnetId"] = subnet
    cluster: Manifest = {
        "location": settings["location"],
        "resourceGroupName": settings["resourceGroupName"],
        "dnsPrefix": bounded_name(name, 54),
        "skuTier": settings.get("skuTier", "Standard"),
        "identity": {"type": "SystemAssigned"},
        "defaultNodePool": system,
    }
    if settings.get("kubernetesVersion"):
        cluster["kubernetesVersion"] = settings["kubernetesVersion"]
    resources = {
        CLOUD_CLUSTER_KEY: managed(
            API_VERSION,
            "KubernetesCluster",
            name,
            namespace,
            cluster,
            writeConnectionSecretToRef={"name": kubeconfig_secret(name)},
        )
    }
    pools_by_name = {}
    for pool in pools:
        shape = pool.shape
        for_provider: Manifest = {
            "kubernetesClusterIdRef": {"name": name},
            "vmSize": shape["vmSize"],
            "mode": "User",
            "nodeCount": pool.nodes,
            "osDiskSizeGb": shape.get("osDiskSizeGb", 256),
            "osSku": shape.get("osSKU", "Ubuntu"),
            "priority": shape.get("priority", "Regular"),
            "nodeLabels": {POOL_LABEL: pool.name},
        }
        if pool.autoscaled:
            for_provider["autoScalingEnabled"] = True
            for_provider["minCount"] = pool.min_nodes if pool.min_nodes is not None else 0
            for_provider["maxCount"] = pool.max_nodes if pool.max_nodes is not None else pool.nodes
        if pool.zones:
            for_provider["zones"] = list(pool.zones)
        if subnet:
            for_provider["vnetSubnetId"] = subnet
        obj = managed(API_VERSION, "KubernetesClusterNodePool", f"{name}-{pool.name}", namespace, for_provider)
        obj["metadata"]["annotations"] = {EXTERNAL_NAME: bounded_name(pool.name, POOL_NAME_LIMIT, alnum=True)}
        resources[pool_key(pool.name)] = obj
        pools_by_name[pool.name] = pool_key(pool.name)
    return CloudCluster(resources, CLOUD_CLUSTER_KEY, pools_by_name)
