"""Run with ``python -m compose_model_pool``."""

from compose_model_pool.main import main

main()
