"""Serve compose-inference-gateway over gRPC."""

import sys

from compose_inference_gateway.fn import FunctionRunner
from modelplane.fnkit import serve


def main() -> None:
    """Serve the function until terminated; exit non-zero if it cannot start."""
    sys.exit(serve.main("compose-inference-gateway", FunctionRunner()))
