"""Load a function's runner in-process, by its Composition functionRef name."""

from __future__ import annotations

import importlib

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
