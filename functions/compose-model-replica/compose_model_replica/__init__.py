"""compose-model-replica.

The composition function that composes one serving instance on its workload cluster.
"""
