"""The answer of a function whose kind has no behaviour yet."""

from __future__ import annotations

import grpc
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from modelplane.kinds import BY_KIND


class NotImplementedRunner(grpcv1.FunctionRunnerServiceServicer):
    """Answers every request with a Warning that the kind is not implemented.

    The desired state passes through unchanged, so nothing already composed by
    an earlier step is dropped.
    """

    def __init__(self, kind: str) -> None:
        """Create a runner for ``kind`` (a key of ``modelplane.kinds.BY_KIND``)."""
        self._kind = BY_KIND[kind]
        self._log = logging.get_logger()

    async def RunFunction(
        self, req: fnv1.RunFunctionRequest, _: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        """Return the request's desired state with a not-implemented warning."""
        self._log.warning("kind not implemented", kind=self._kind.kind, tag=req.meta.tag)
        rsp = response.to(req)
        # Nothing is composed, so nothing can be serving: never let the XR look Ready.
        rsp.desired.composite.ready = fnv1.READY_FALSE
        response.warning(
            rsp,
            f"{self._kind.kind} is not implemented yet: {self._kind.function} composes nothing "
            "and leaves the desired state unchanged",
        )
        return rsp
