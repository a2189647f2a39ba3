"""Run with ``python -m compose_inference_class``."""

from compose_inference_class.main import main

main()
