"""Run with ``python -m compose_inference_gateway``."""

from compose_inference_gateway.main import main

main()
