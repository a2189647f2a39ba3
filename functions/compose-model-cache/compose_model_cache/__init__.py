"""compose-model-cache.

The composition function that stages a ModelCache's weights on its workload clusters.
"""
