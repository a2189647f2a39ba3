"""Batch inference runs (ModelBatchRun): the pure core compose-model-batch-run calls.

One module per concept: ``work`` (the spec resolved, and what is wrong with it), ``uris``,
``cron`` and ``durations`` (what it is made of), ``placement`` (a Dedicated worker, through the
fleet scheduler), ``service`` (a Service-mode client's cluster and URL), ``wrapping`` (the
cluster's workload scheduler), ``pods`` (the Job or CronJob and its pod), ``observed`` (what is
read back), ``contract`` (the worker's report) and ``runs`` (phase, times and counts).
"""
