"""compose-inference-gateway.

The composition function that composes the control plane's inference gateway.
"""
