"""Serve compose-model-cache over gRPC."""

import sys

from compose_model_cache.fn import FunctionRunner
from modelplane.fnkit import serve


def main() -> None:
    """Serve the function until terminated; exit non-zero if it cannot start."""
    sys.exit(serve.main("compose-model-cache", FunctionRunner()))
