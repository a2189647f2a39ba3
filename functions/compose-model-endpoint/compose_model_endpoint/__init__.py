"""compose-model-endpoint.

The composition function that composes an Envoy Gateway Backend for one inference endpoint.
"""
