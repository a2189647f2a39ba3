"""compose-inference-class.

The composition function that validates an InferenceClass, a tested recipe for one kind of GPU node pool.
"""
