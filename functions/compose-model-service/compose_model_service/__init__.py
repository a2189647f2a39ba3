"""compose-model-service.

The composition function that composes the HTTPRoute that exposes a model behind the inference gateway.
"""
