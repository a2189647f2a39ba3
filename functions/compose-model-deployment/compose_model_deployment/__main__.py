"""Run with ``python -m compose_model_deployment``."""

from compose_model_deployment.main import main

main()
