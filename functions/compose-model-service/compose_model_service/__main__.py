"""Run with ``python -m compose_model_service``."""

from compose_model_service.main import main

main()
