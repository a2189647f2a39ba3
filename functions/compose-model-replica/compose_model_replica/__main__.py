"""Run with ``python -m compose_model_replica``."""

from compose_model_replica.main import main

main()
