"""EKS: an ``eks.aws.m.upbound.io`` Cluster, a ClusterAuth that writes its kubeconfig, one NodeGroup per pool."""

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
from modelplane.names import CLOUD_CLUSTER_KEY, EKS_ACCESS_KEY, POOL_LABEL, kubeconfig_secret, pool_key

API_VERSION = "eks.aws.m.upbound.io/v1beta1"
SYSTEM_INSTANCE = "m6i.xlarge"


def _scaling(pool: PoolPlan) -> dict[str, int]:
    low = pool.min_nodes if pool.min_nodes is not None else pool.nodes
    high = pool.max_nodes if pool.max_nodes is not None else pool.nodes
    return {"desiredSize": pool.nodes, "minSize": low, "maxSize": max(1, high)}


def compose(name: str, namespace: str, settings: Mapping[str, Any], pools: Sequence[PoolPlan]) -> CloudCluster:
    """The EKS cluster ``name`` with a system node group and ``pools``.

    Args:
        name: The InferenceCluster's name.
        namespace: The namespace of the managed resources.
        settings: ``spec.cluster.eks``.
        pools: The GPU pools.
    """
    region = settings["region"]
    vpc: Manifest = {
        "subnetIds": list(settings["subnetIds"]),
        "endpointPublicAccess": bool(settings.get("endpointPublicAccess", True)),
        "endpointPrivateAccess": True,
    }
    if settings.get("securityGroupIds"):
        vpc["securityGroupIds"] = list(settings["securityGroupIds"])
    cluster: Manifest = {
        "region": region,
        "roleArn": settings["roleArn"],
        "vpcConfig": vpc,
        "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"},
    }
    if settings.get("version"):
        cluster["version"] = settings["version"]
    resources = {
        CLOUD_CLUSTER_KEY: managed(API_VERSION, "Cluster", name, namespace, cluster),
        # The cluster publishes no kubeconfig itself: ClusterAuth writes one (with a refreshed token).
        EKS_ACCESS_KEY: managed(
            API_VERSION,
            "ClusterAuth",
            name,
            namespace,
            {"region": region, "clusterNameRef": {"name": name}},
            writeConnectionSecretToRef={"name": kubeconfig_secret(name)},
        ),
    }
    common = {
        "region": region,
        "clusterNameRef": {"name": name},
        "nodeRoleArn": settings["nodeRoleArn"],
        "subnetIds": list(settings["subnetIds"]),
    }
    system = managed(
        API_VERSION,
        "NodeGroup",
        f"{name}-{SYSTEM_POOL}",
        namespace,
        {
            **common,
            "instanceTypes": [SYSTEM_INSTANCE],
            "amiType": "AL2023_x86_64_STANDARD",
            "scalingConfig": {"desiredSize": 2, "minSize": 1, "maxSize": 3},
            "labels": {POOL_LABEL: SYSTEM_POOL},
        },
    )
    system["metadata"]["annotations"] = {EXTERNAL_NAME: SYSTEM_POOL}
    resources[pool_key(SYSTEM_POOL)] = system
    pools_by_name = {SYSTEM_POOL: pool_key(SYSTEM_POOL)}
    for pool in pools:
        shape = pool.shape
        for_provider: Manifest = {
            **common,
            "instanceTypes": [shape["instanceType"]],
            "amiType": shape.get("amiType", "AL2023_x86_64_NVIDIA"),
            "diskSize": shape.get("diskSizeGb", 200),
            "capacityType": shape.get("capacityType", "ON_DEMAND"),
            "scalingConfig": _scaling(pool),
            "labels": {POOL_LABEL: pool.name},
        }
        obj = managed(API_VERSION, "NodeGroup", f"{name}-{pool.name}", namespace, for_provider)
        obj["metadata"]["annotations"] = {EXTERNAL_NAME: pool.name}
        resources[pool_key(pool.name)] = obj
        pools_by_name[pool.name] = pool_key(pool.name)
    return CloudCluster(resources, CLOUD_CLUSTER_KEY, pools_by_name)
