"""Serve compose-serving-stack over gRPC."""

import sys

from modelplane.fnkit import serve

from compose_serving_stack.fn import FunctionRunner


def main() -> None:
    """Serve the function until terminated; exit non-zero if it cannot start."""
    sys.exit(serve.main("compose-serving-stack", FunctionRunner()))
