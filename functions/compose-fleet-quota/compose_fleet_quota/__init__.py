"""compose-fleet-quota.

The composition function of a FleetQuota: it counts what the ModelReplicas of the namespaces it selects hold.
"""
