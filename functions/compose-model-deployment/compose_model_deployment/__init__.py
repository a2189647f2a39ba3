"""compose-model-deployment.

The composition function that schedules a model deployment's replicas onto the fleet.
"""
