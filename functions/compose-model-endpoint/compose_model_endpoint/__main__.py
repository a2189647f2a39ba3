"""Run with ``python -m compose_model_endpoint``."""

from compose_model_endpoint.main import main

main()
