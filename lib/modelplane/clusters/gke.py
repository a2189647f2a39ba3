"""GKE: a regional ``container.gcp.m.upbound.io`` Cluster without its default pool, and one NodePool per pool."""

from __future__ import annotations

import math
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
from modelplane.names import CLOUD_CLUSTER_KEY, KUBECONFIG_KEY, POOL_LABEL, bounded_name, kubeconfig_secret, pool_key

API_VERSION = "container.gcp.m.upbound.io/v1beta1"
SYSTEM_MACHINE = "e2-standard-4"
# GKE's DRA setup: its own device plugin stays off and the NVIDIA DRA driver publishes the GPUs.
_DRA_LABELS = {"gke-no-default-nvidia-gpu-device-plugin": "true", "nvidia.com/gpu.present": "true"}


def _sizes(pool: PoolPlan) -> dict[str, Any]:
    # GKE counts nodes per zone; the pool's counts are totals, so divide over its zones.
    zones = max(1, len(pool.zones))
    out: dict[str, Any] = {"initialNodeCount": math.ceil(pool.nodes / zones)}
    if pool.autoscaled:
        out["autoscaling"] = {
            "totalMinNodeCount": pool.min_nodes if pool.min_nodes is not None else 0,
            "totalMaxNodeCount": pool.max_nodes if pool.max_nodes is not None else pool.nodes,
            "locationPolicy": "ANY",
        }
    else:
        out["nodeCount"] = math.ceil(pool.nodes / zones)
    if pool.zones:
        out["nodeLocations"] = list(pool.zones)
    return out


def _node_config(pool: PoolPlan) -> Manifest:
    shape = pool.shape
    accelerator = shape.get("accelerator", {})
    config: Manifest = {
        "machineType": shape["machineType"],
        "diskSizeGb": shape.get("diskSizeGb", 200),
        "spot": bool(shape.get("spot", False)),
        "gvnic": {"enabled": bool(shape.get("networking", {}).get("gvnic", True))},
        "guestAccelerator": [
            {
                "type": accelerator.get("type", ""),
                "count": accelerator.get("count", 1),
                "gpuDriverInstallationConfig": {"gpuDriverVersion": accelerator.get("gpuDriverVersion", "LATEST")},
            }
        ],
        "labels": {POOL_LABEL: pool.name, **_DRA_LABELS},
    }
    if shape.get("diskType"):
        config["diskType"] = shape["diskType"]
    return config


def compose(name: str, namespace: str, settings: Mapping[str, Any], pools: Sequence[PoolPlan]) -> CloudCluster:
    """The GKE cluster ``name`` with a system pool and ``pools``.

    Args:
        name: The InferenceCluster's name (the GKE cluster's, cut to GKE's 40 characters).
        namespace: The namespace of the managed resources.
        settings: ``spec.cluster.gke``.
        pools: The GPU pools.
    """
    region = settings["region"]
    project = settings["project"]
    cluster: Manifest = {
        "project": project,
        "location": region,
        "removeDefaultNodePool": True,
        "initialNodeCount": 1,
        "deletionProtection": False,
        "releaseChannel": {"channel": settings.get("releaseChannel", "REGULAR")},
    }
    for field, key in (("kubernetesVersion", "minMasterVersion"), ("network", "network"), ("subnetwork", "subnetwork")):
        if settings.get(field):
            cluster[key] = settings[field]
    resources = {
        CLOUD_CLUSTER_KEY: managed(
            API_VERSION,
            "Cluster",
            name,
            namespace,
            cluster,
            writeConnectionSecretToRef={"name": kubeconfig_secret(name)},
        )
    }
    resources[CLOUD_CLUSTER_KEY]["metadata"]["annotations"] = {EXTERNAL_NAME: bounded_name(name, 40)}
    pools_by_name = {}
    common = {"project": project, "location": region, "clusterRef": {"name": name}}
    system = managed(
        API_VERSION,
        "NodePool",
        f"{name}-{SYSTEM_POOL}",
        namespace,
        {
            **common,
            "nodeCount": 1,
            "initialNodeCount": 1,
            "nodeConfig": {"machineType": SYSTEM_MACHINE, "labels": {POOL_LABEL: SYSTEM_POOL}},
        },
    )
    system["metadata"]["annotations"] = {EXTERNAL_NAME: SYSTEM_POOL}
    resources[pool_key(SYSTEM_POOL)] = system
    pools_by_name[SYSTEM_POOL] = pool_key(SYSTEM_POOL)
    for pool in pools:
        for_provider: Manifest = {**common, **_sizes(pool), "nodeConfig": _node_config(pool)}
        networks = pool.shape.get("networking", {}).get("additionalNetworks") or []
        if networks:
            for_provider["networkConfig"] = {
                "additionalNodeNetworkConfigs": [
                    {"network": n["network"], "subnetwork": n["subnetwork"]} for n in networks
                ]
            }
        obj = managed(API_VERSION, "NodePool", f"{name}-{pool.name}", namespace, for_provider)
        obj["metadata"]["annotations"] = {EXTERNAL_NAME: pool.name}
        resources[pool_key(pool.name)] = obj
        pools_by_name[pool.name] = pool_key(pool.name)
    return CloudCluster(resources, CLOUD_CLUSTER_KEY, pools_by_name)


__all__ = ["KUBECONFIG_KEY", "compose"]
