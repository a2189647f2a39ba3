"""A ModelDeployment's status policy: what its schedule and the time say, as conditions and results.

Pure functions over the scheduler's types (``modelplane.scheduling``): ``report``
says what a schedule kept, held back or could not place (the Scheduled
condition, warnings, events); ``progress`` says how a rollout, a drain and a
failover go over time (Progressing, Failover, the next call's TTL).
"""
