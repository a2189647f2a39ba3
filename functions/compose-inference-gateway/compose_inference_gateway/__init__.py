"""compose-inference-gateway: the composition function that composes the control plane's inference gateway."""
