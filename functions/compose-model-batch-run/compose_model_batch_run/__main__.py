"""Run with ``python -m compose_model_batch_run``."""

from compose_model_batch_run.main import main

main()
