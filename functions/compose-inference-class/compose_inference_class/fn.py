"""The InferenceClass function: validate the class and report its accelerator.

An InferenceClass composes nothing. The function reviews it, reports a
``Valid`` condition that names every invalid field, publishes the class's
accelerator in ``status`` (what pool capacity is counted in) and marks the
class ready only when it is valid.
"""

from __future__ import annotations

import functools
from typing import Any

import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.classes import ClassReview, review_class
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import read_xr
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.problems import Problem, describe
from modelplane_models.inference_class import InferenceClass


def compose(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    _ledger: Ledger,  # a class composes nothing: there is nothing to keep
    log: structlog.stdlib.BoundLogger,
) -> None:
    """Review the class, then write its status, conditions and readiness."""
    xr = read_xr(req, InferenceClass)
    if isinstance(xr, list):
        review, problems = None, xr
    else:
        review = review_class(xr.spec) if xr.spec is not None else None
        problems = list(review.problems) if review else [Problem("spec", "required")]
    if review is not None:
        resource.update(rsp.desired.composite, {"status": _status(review)})
    if problems:
        message = describe(problems)
        log.info("invalid class", problems=message)
        response.warning(rsp, f"InferenceClass is invalid: {message}")
        set_conditions(rsp, Condition(Type.VALID, Status.FALSE, Reason.INVALID_SPEC, message))
    else:
        set_conditions(rsp, Condition(Type.VALID, Status.TRUE, Reason.VALID, "the class is valid"))
    set_ready(rsp, ready=not problems)


FunctionRunner = functools.partial(ComposeRunner, compose)


def _status(review: ClassReview) -> dict[str, Any]:
    status: dict[str, Any] = {"summary": review.summary}
    acc = review.accelerator
    if acc is not None:
        accelerator: dict[str, Any] = {"device": acc.device, "driver": acc.driver, "countPerNode": acc.count_per_node}
        if acc.memory is not None:
            accelerator["memory"] = acc.memory
        if acc.product_name is not None:
            accelerator["productName"] = acc.product_name
        status["accelerator"] = accelerator
    return status
