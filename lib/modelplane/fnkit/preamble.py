"""How every function starts: parse the XR, or keep everything and say why; wait for inputs not fetched yet."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pydantic
import structlog
from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import InvalidXRError, parse_composite
from modelplane.problems import Problem

M = TypeVar("M", bound=pydantic.BaseModel)


def parse_or_keep(
    ledger: Ledger,
    log: structlog.stdlib.BoundLogger,
    model: type[M],
    invalid: Callable[[list[Problem]], Condition],
    check: Callable[[M], list[Problem]] | None = None,
) -> M | None:
    """The observed XR as ``model``; None, after ``keep_all``, when it does not validate.

    Args:
        ledger: The call's ledger.
        log: The call's logger.
        model: The XR's generated model.
        invalid: The condition that says why, from the problems (each naming its field).
        check: The XRD's rules the model does not check (a CEL rule, a field required with another).
    """
    xr = read_xr(ledger.req, model, check)
    if not isinstance(xr, list):
        return xr
    keep_all(ledger, log, invalid(xr))
    return None


def read_xr(
    req: fnv1.RunFunctionRequest, model: type[M], check: Callable[[M], list[Problem]] | None = None
) -> M | list[Problem]:
    """The observed XR as ``model``, or the problems that keep it from validating (each naming its field).

    ``parse_or_keep``'s first half, for a function that composes nothing to keep (an InferenceClass).
    """
    try:
        xr = parse_composite(req, model)
    except InvalidXRError as err:
        return err.problems
    problems = check(xr) if check is not None else []
    return problems or xr


def keep_all(ledger: Ledger, log: structlog.stdlib.BoundLogger, why: Condition) -> None:
    """Keep everything composed before, report ``why`` and mark the XR not ready.

    For when an input is missing or invalid and the function cannot decide anything: a
    False condition is also a Warning result naming how much was kept.
    """
    kept = ledger.keep_all(why.message)
    log.info("keeping composed resources", reason=str(why.reason), message=why.message, kept=kept)
    if why.status == Status.FALSE:
        response.warning(ledger.rsp, f"{why.message}; kept {kept} composed resource(s) unchanged")
    set_conditions(ledger.rsp, why)
    set_ready(ledger.rsp, ready=False)


def wait(ledger: Ledger, log: structlog.stdlib.BoundLogger, typ: Type, reason: Reason, message: str) -> None:
    """Keep everything while Crossplane fetches the required resources asked for: it calls again with them.

    ``typ`` is the XR's condition that waits (Unknown), ``message`` what is being read.
    """
    keep_all(ledger, log, Condition(typ, Status.UNKNOWN, reason, message))
