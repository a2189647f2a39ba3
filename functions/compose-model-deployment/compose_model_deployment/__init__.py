"""compose-model-deployment: the composition function that schedules a model deployment's replicas onto the fleet."""
