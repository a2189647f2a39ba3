"""Fleet capacity: what each pool has, what ModelReplicas occupy on it, and what is free per node."""

from modelplane.capacity.clusters import ClusterInfo, PoolInfo, cluster_info
from modelplane.capacity.nodes import NodeFree
from modelplane.capacity.observed import Observed, Source
from modelplane.capacity.occupancy import DeploymentKey, Occupancy, RoleOccupancy, replica_occupancy, role_occupancy
from modelplane.capacity.pools import PoolCapacity, PoolKey
from modelplane.capacity.summary import ClusterSummary, Listed, PoolSummary, summarize

__all__ = [
    "ClusterInfo",
    "ClusterSummary",
    "DeploymentKey",
    "Listed",
    "NodeFree",
    "Observed",
    "Occupancy",
    "PoolCapacity",
    "PoolInfo",
    "PoolKey",
    "PoolSummary",
    "RoleOccupancy",
    "Source",
    "cluster_info",
    "replica_occupancy",
    "role_occupancy",
    "summarize",
]
