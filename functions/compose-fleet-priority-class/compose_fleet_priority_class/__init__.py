"""compose-fleet-priority-class.

The composition function that validates a FleetPriorityClass, a named priority for ModelDeployments.
"""
