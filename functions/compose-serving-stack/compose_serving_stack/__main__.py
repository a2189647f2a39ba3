"""Run with ``python -m compose_serving_stack``."""

from compose_serving_stack.main import main

main()
