"""What every Modelplane composition function shares: serving, loading, request helpers.

This package is the layer between the Crossplane SDK and the pure ``modelplane``
core; the core modules never import it.
"""

import os

from crossplane.function import logging


def configure_cli_logging() -> None:
    """Keep functions run in-process by a CLI from logging onto its stdout.

    A function served by Crossplane logs JSON lines to stdout; ``modelplane render``
    and ``preview`` print YAML there, so they silence function logs unless
    ``MODELPLANE_DEBUG`` is set (then logs are human-readable, still on stdout).
    """
    logging.configure(logging.Level.DEBUG if os.environ.get("MODELPLANE_DEBUG") else logging.Level.DISABLED)
