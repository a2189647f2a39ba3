"""Cloud clusters: the managed cluster and its node pools on GKE, EKS or AKS, as Upbound provider resources.

``plan_pools`` matches each ``spec.nodePools[]`` entry with its class's
provisioning block (refusing pools whose class is missing or provisions for
another cloud); ``compose_cloud`` builds the provider's namespaced managed
resources through one builder per cloud (one table, ``BUILDERS``).
"""

from modelplane.clusters.plan import BUILDERS, PROVIDER_BLOCKS, PoolProblem, compose_cloud, plan_pools
from modelplane.clusters.types import CloudCluster, PoolPlan

__all__ = ["BUILDERS", "PROVIDER_BLOCKS", "CloudCluster", "PoolPlan", "PoolProblem", "compose_cloud", "plan_pools"]
