"""The RunFunction every Modelplane function shares: bind the log, answer with what compose writes, audit it."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import grpc
import structlog
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import duration_pb2 as durationpb

from modelplane.fnkit.ledger import Ledger

Compose = Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse, Ledger, structlog.stdlib.BoundLogger], None]
Unguarded = Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse, structlog.stdlib.BoundLogger], None]

# Characters of an exception's message a Fatal result carries (a message may quote a whole input).
_MESSAGE_LIMIT = 500


class ComposeRunner(grpcv1.FunctionRunnerServiceServicer):
    """A FunctionRunner whose behaviour is one ``compose(req, rsp, ledger, log)`` function.

    ``compose`` reads the request and writes the desired state, status and
    conditions into the response that ``respond`` started, accounting for
    every observed composed resource in ``ledger``; it reports bad input as
    conditions and results, never by raising. A function's ``fn.py`` names its
    runner ``FunctionRunner = functools.partial(ComposeRunner, compose)``: what
    ``main.py`` serves and ``modelplane render`` runs in-process.
    """

    def __init__(self, compose: Compose) -> None:
        """Run ``compose`` for every request."""
        self._compose = compose
        self._log = logging.get_logger()
        # The logger of the last call, the tag it was bound to, and the logging configuration then: the
        # ids of its parts, which the parts themselves (kept beside them, alive) keep meaning them.
        self._bound: tuple[str, tuple[int, ...], structlog.stdlib.BoundLogger, tuple[object, ...]] | None = None

    def _logger(self, tag: str) -> structlog.stdlib.BoundLogger:
        """The logger bound to ``tag``: the last call's while neither the tag nor the configuration changed.

        Binding builds a logger from structlog's configuration every time (a few percent of a
        preview's CPU, in-process); a bound logger is immutable, so calls with one tag share it.
        """
        # A logger prints to the stream it found when built: a redirected one is a new configuration too.
        config = (*structlog.get_config().values(), sys.stdout, sys.stderr)
        ids = tuple(map(id, config))
        found = self._bound
        if found is not None and found[0] == tag and found[1] == ids:
            return found[2]
        log: structlog.stdlib.BoundLogger = self._log.bind(tag=tag)
        self._bound = (tag, ids, log, config)
        return log

    @property
    def compose(self) -> Unguarded:
        """What this runner runs, without either guard (for tests that want any exception or drop out)."""
        return lambda req, rsp, log: self._compose(req, rsp, Ledger(req, rsp), log)

    async def RunFunction(
        self, req: fnv1.RunFunctionRequest, _: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        """Answer one request: an exception out of ``compose`` becomes a Fatal result naming it.

        What ``compose`` left unaccounted for in its ledger is kept, with a warning naming it
        (``Ledger.guard``): the last guard of "never drop what runs".
        """
        log = self._logger(req.meta.tag)
        rsp = respond(req)
        ledger = Ledger(req, rsp)
        try:
            self._compose(req, rsp, ledger, log)
        except Exception as err:
            log.exception("compose raised", error=type(err).__name__)
            return fatal(req, err)
        forgotten = ledger.guard()
        if forgotten:
            log.warning("kept composed resources no writer accounted for", kept=forgotten)
        return rsp


def respond(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    """``response.to(req)``: the request's tag, desired state and context, cached for the SDK's default TTL.

    Its TTL built once: building a Duration from a timedelta every call costs as much as the rest.
    """
    return fnv1.RunFunctionResponse(
        meta=fnv1.ResponseMeta(tag=req.meta.tag, ttl=_TTL), desired=req.desired, context=req.context
    )


_TTL = durationpb.Duration()
_TTL.FromTimedelta(response.DEFAULT_TTL)


def fatal(req: fnv1.RunFunctionRequest, err: Exception) -> fnv1.RunFunctionResponse:
    """A fresh response to ``req`` whose only result is a Fatal one naming ``err`` and where it was raised.

    A Fatal result is the safe answer to a bug: Crossplane stops the pipeline at
    the first Fatal result and returns before it garbage-collects or applies
    anything (FunctionComposer.Compose in crossplane/crossplane), so every
    composed resource stays as it is, and the XR's Synced condition says
    ``ReconcileError`` with this message. A bare gRPC error would do the same
    with only ``UNKNOWN: Unexpected <class ...>`` to go on.
    """
    frames = traceback.extract_tb(err.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    message = str(err)
    if len(message) > _MESSAGE_LIMIT:
        message = f"{message[:_MESSAGE_LIMIT]}... ({len(message)} characters)"
    rsp = respond(req)
    response.fatal(rsp, f"internal error, nothing was changed: {type(err).__name__}{where}: {message}")
    return rsp
