"""The program a batch run's pod runs (``batch.py``), shipped in the run's ConfigMap, never imported here."""
