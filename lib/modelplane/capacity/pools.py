"""A pool of the fleet by key, its capacity as a record to show, and inputs read as the capacity code reads them.

What a pool has free is counted in one place: ``modelplane.capacity.summary``, as each
InferenceCluster publishes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.capacity.clusters import ClusterInfo, cluster_info
from modelplane.capacity.nodes import NodeFree
from modelplane.capacity.observed import Source
from modelplane.capacity.occupancy import Occupancy, replica_occupancy
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

PoolKey = tuple[str, str]
"""A pool by (cluster name, pool name)."""


@dataclass(frozen=True)
class PoolCapacity:
    """The capacity of one pool, in accelerators.

    Attributes:
        cluster: The InferenceCluster.
        pool: The pool's name.
        class_name: The pool's InferenceClass.
        per_node: Accelerators per node.
        nodes: Nodes in the pool.
        held: Accelerators the counted ModelReplicas hold.
        observed_in_use: Accelerators the cluster's scheduler reports in use, if it does.
        source: Where the figure of accelerators in use comes from.
        overcommitted: Accelerators held beyond what the nodes have (0 normally).
        node_free: Free accelerators per node.
    """

    cluster: str
    pool: str
    class_name: str
    per_node: int
    nodes: int
    held: int
    observed_in_use: int | None
    source: Source
    overcommitted: int
    node_free: NodeFree

    @property
    def declared(self) -> int:
        """Accelerators the pool has (nodes x per node)."""
        return self.nodes * self.per_node

    @property
    def free(self) -> int:
        """Accelerators free."""
        return self.node_free.free

    @property
    def in_use(self) -> int:
        """Accelerators in use (declared - free)."""
        return self.declared - self.free


def as_cluster_info(cluster: InferenceCluster | ClusterInfo) -> ClusterInfo | None:
    """A cluster as ``ClusterInfo`` (read from the model when it is one)."""
    return cluster if isinstance(cluster, ClusterInfo) else cluster_info(cluster)


def as_occupancy(replica: ModelReplica | Occupancy) -> Occupancy | None:
    """A replica as its ``Occupancy`` (read from the model when it is one)."""
    return replica if isinstance(replica, Occupancy) else replica_occupancy(replica)
