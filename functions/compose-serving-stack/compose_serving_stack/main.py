"""Serve compose-serving-stack over gRPC."""

import sys

from compose_serving_stack.fn import FunctionRunner
from modelplane.fnkit import serve


def main() -> None:
    """Serve the function until terminated; exit non-zero if it cannot start."""
    sys.exit(serve.main("compose-serving-stack", FunctionRunner()))
