"""compose-inference-cluster: the composition function that composes a GPU cluster of the fleet: the managed cluster, its ProviderConfigs and its ServingStack."""
