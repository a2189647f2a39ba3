"""A runner binds its logger once per tag and logging configuration: what a call logs goes where it always did."""

from __future__ import annotations

import asyncio
import io
import json
from contextlib import redirect_stdout

import pytest
import structlog
from crossplane.function import logging
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.runner import ComposeRunner


def _say_hello(_req: fnv1.RunFunctionRequest, _rsp: fnv1.RunFunctionResponse, _l: Ledger, log: object) -> None:
    log.info("hello")  # type: ignore[attr-defined]


def _call(runner: ComposeRunner, tag: str, out: io.StringIO) -> str:
    """What one call of ``runner`` with ``tag`` printed (``out`` is stdout)."""
    start = out.tell()
    asyncio.run(runner.RunFunction(fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag=tag)), None))
    return out.getvalue()[start:]


@pytest.fixture(autouse=True)
def _restore_logging() -> object:
    before = structlog.get_config()
    yield
    structlog.configure(**before)


# (what changes between two calls, whether the second logs with the first's logger)
CASES = [
    ("nothing", True),
    ("the tag", False),
    ("the configuration", False),
    ("stdout", False),
]


@pytest.mark.parametrize(("change", "shared"), CASES, ids=[c[0] for c in CASES])
def test_a_call_logs_with_its_own_tag_under_the_configuration_then(change: str, *, shared: bool) -> None:
    logging.configure(logging.Level.INFO)
    runner = ComposeRunner(_say_hello)
    out, redirected = io.StringIO(), io.StringIO()
    with redirect_stdout(out):
        first = _call(runner, "t1", out)
        bound = runner._bound
        if change == "the configuration":
            logging.configure(logging.Level.DISABLED)
        if change == "stdout":
            with redirect_stdout(redirected):
                second = _call(runner, "t1", redirected)
        else:
            second = _call(runner, "t2" if change == "the tag" else "t1", out)
    assert json.loads(first)["tag"] == "t1"
    if change == "the configuration":
        assert second == ""
    else:
        assert json.loads(second)["tag"] == ("t2" if change == "the tag" else "t1")
    assert bound is not None and runner._bound is not None
    assert (runner._bound[2] is bound[2]) is shared
