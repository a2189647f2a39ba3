"""Serve compose-model-batch-run over gRPC."""

import sys

from compose_model_batch_run.fn import FunctionRunner
from modelplane.fnkit import serve


def main() -> None:
    """Serve the function until terminated; exit non-zero if it cannot start."""
    sys.exit(serve.main("compose-model-batch-run", FunctionRunner()))
