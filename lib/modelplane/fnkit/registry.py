"""Moved to ``modelplane.render.runners``: running functions in-process is the CLIs' business.

Kept until ``modelplane.render.pipeline`` imports it from there (the layers
contract in pyproject.toml lists that import as the one allowed exception).
"""

from modelplane.render.runners import UnknownFunctionError, load_runner

__all__ = ["UnknownFunctionError", "load_runner"]
