"""Fleet capacity: what each pool has, what ModelReplicas occupy on it, and what is free per node."""

from modelplane.capacity.clusters import ClusterInfo, PoolInfo, cluster_info
from modelplane.capacity.nodes import NodeFree
from modelplane.capacity.observed import Observed, Source
from modelplane.capacity.occupancy import DeploymentKey, Occupancy, RoleOccupancy, replica_occupancy, role_occupancy
from modelplane.capacity.pools import PoolCapacity, PoolKey
from modelplane.capacity.summary import ClusterSummary, Listed, PoolSummary, summarize

# The names ``Occupancy`` had while "hold" meant four things; the preview reads them until it is rewritten.
Holding = Occupancy
replica_holding = replica_occupancy

__all__ = [
    "ClusterInfo",
    "ClusterSummary",
    "DeploymentKey",
    "Holding",
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
    "replica_holding",
    "replica_occupancy",
    "role_occupancy",
    "summarize",
]
