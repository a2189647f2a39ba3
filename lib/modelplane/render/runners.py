"""Run Modelplane's functions in-process, as ``modelplane render`` and ``preview`` do.

A Composition names each function by its functionRef; ``load_runner`` imports the
function's package by that name (``modelplane.kinds``), so nothing here imports a
function statically. ``configure_cli_logging`` keeps the functions' logs off the
command's stdout.
"""

from __future__ import annotations

import importlib
import os

from crossplane.function import logging
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from modelplane.kinds import BY_FUNCTION_REF


class UnknownFunctionError(LookupError):
    """A Composition names a function that is not part of Modelplane."""


def load_runner(function_ref: str) -> grpcv1.FunctionRunnerServiceServicer:
    """Return a fresh ``FunctionRunner`` of the function a Composition names."""
    kind = BY_FUNCTION_REF.get(function_ref)
    if kind is None:
        known = ", ".join(sorted(BY_FUNCTION_REF))
        msg = f"unknown function {function_ref!r}: Modelplane ships {known}"
        raise UnknownFunctionError(msg)
    module = importlib.import_module(f"{kind.module}.fn")
    runner: grpcv1.FunctionRunnerServiceServicer = module.FunctionRunner()
    return runner


def configure_cli_logging() -> None:
    """Keep functions run in-process by a CLI from logging onto its stdout.

    A function served by Crossplane logs JSON lines to stdout; ``modelplane render``
    and ``preview`` print YAML there, so they silence function logs unless
    ``MODELPLANE_DEBUG`` is set (then logs are human-readable, still on stdout).
    """
    logging.configure(logging.Level.DEBUG if os.environ.get("MODELPLANE_DEBUG") else logging.Level.DISABLED)
