"""What every Modelplane composition function shares: serving, the ledger, reading inputs, writing status.

This package is the layer between the Crossplane SDK and the pure ``modelplane``
core; the core modules never import it.
"""


def configure_cli_logging() -> None:
    """Moved to ``modelplane.render.runners``; kept until ``modelplane.preview.command`` imports it from there."""
    from modelplane.render.runners import configure_cli_logging as configure  # noqa: PLC0415 - not at function start-up

    configure()
