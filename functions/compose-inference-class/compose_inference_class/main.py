"""Serve compose-inference-class over gRPC."""

import sys

from compose_inference_class.fn import FunctionRunner
from modelplane.fnkit import serve


def main() -> None:
    """Serve the function until terminated; exit non-zero if it cannot start."""
    sys.exit(serve.main("compose-inference-class", FunctionRunner()))
