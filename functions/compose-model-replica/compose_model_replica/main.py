"""Serve compose-model-replica over gRPC."""

import sys

from modelplane.fnkit import serve

from compose_model_replica.fn import FunctionRunner


def main() -> None:
    """Serve the function until terminated; exit non-zero if it cannot start."""
    sys.exit(serve.main("compose-model-replica", FunctionRunner()))
