"""compose-inference-cluster.

The composition function that composes a GPU cluster of the fleet:
the managed cluster, its ProviderConfigs and its ServingStack.
"""
