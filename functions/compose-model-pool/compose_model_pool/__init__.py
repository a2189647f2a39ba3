"""compose-model-pool.

The composition function that composes a ModelDeployment's InferencePool and endpoint picker on one cluster.
"""
