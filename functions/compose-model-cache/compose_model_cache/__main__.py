"""Run with ``python -m compose_model_cache``."""

from compose_model_cache.main import main

main()
