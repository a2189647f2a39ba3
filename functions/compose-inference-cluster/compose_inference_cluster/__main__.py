"""Run with ``python -m compose_inference_cluster``."""

from compose_inference_cluster.main import main

main()
