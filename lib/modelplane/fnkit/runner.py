"""The RunFunction every Modelplane function shares: bind the log, answer with what compose writes."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import structlog
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

Compose = Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse, structlog.stdlib.BoundLogger], None]


class ComposeRunner(grpcv1.FunctionRunnerServiceServicer):
    """A FunctionRunner whose behaviour is one ``compose(req, rsp, log)`` function.

    ``compose`` reads the request and writes the desired state, status and
    conditions into the response that ``response.to`` started; it reports bad
    input as conditions and results, never by raising.
    """

    def __init__(self, compose: Compose) -> None:
        """Run ``compose`` for every request."""
        self._compose = compose
        self._log = logging.get_logger()

    async def RunFunction(
        self, req: fnv1.RunFunctionRequest, _: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        """Answer one request."""
        rsp = response.to(req)
        self._compose(req, rsp, self._log.bind(tag=req.meta.tag))
        return rsp
