"""compose-model-replica: the composition function that composes one serving instance on its workload cluster."""
