"""compose-model-endpoint: the composition function that composes an Envoy Gateway Backend for one inference endpoint."""
