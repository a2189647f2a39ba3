"""Fleet capacity: what each pool has, what ModelReplicas hold on it, and what is free per node."""

from modelplane.capacity.clusters import ClusterInfo, PoolInfo, cluster_info
from modelplane.capacity.holdings import DeploymentKey, Holding, RoleHolding, replica_holding, role_holding
from modelplane.capacity.nodes import NodeFree
from modelplane.capacity.observed import Observed, Source
from modelplane.capacity.pools import PoolCapacity, PoolKey
from modelplane.capacity.summary import ClusterSummary, Listed, PoolSummary, summarize

__all__ = [
    "ClusterInfo",
    "ClusterSummary",
    "DeploymentKey",
    "Holding",
    "Listed",
    "NodeFree",
    "Observed",
    "PoolCapacity",
    "PoolInfo",
    "PoolKey",
    "PoolSummary",
    "RoleHolding",
    "Source",
    "cluster_info",
    "replica_holding",
    "role_holding",
    "summarize",
]
