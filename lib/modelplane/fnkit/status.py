"""Write pure conditions and readiness into a RunFunctionResponse."""

from __future__ import annotations

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Status
from modelplane.readiness import VERDICT_FIELD


def set_conditions(rsp: fnv1.RunFunctionResponse, *conditions: Condition) -> None:
    """Report ``conditions`` on the XR, as ``response.set_conditions`` does (without building its Conditions first)."""
    for c in conditions:
        written = fnv1.Condition(
            type=c.type, status=_STATUS.get(c.status, fnv1.STATUS_CONDITION_UNKNOWN), reason=c.reason or ""
        )
        if c.message:
            written.message = c.message
        rsp.conditions.append(written)


_STATUS = {
    Status.TRUE: fnv1.STATUS_CONDITION_TRUE,
    Status.FALSE: fnv1.STATUS_CONDITION_FALSE,
    Status.UNKNOWN: fnv1.STATUS_CONDITION_UNKNOWN,
}


def set_ready(rsp: fnv1.RunFunctionResponse, *, ready: bool) -> None:
    """Tell Crossplane whether the XR itself is ready, and publish it in ``status.readyVerdict``.

    Readers of the XR read the verdict before its Ready condition, which Crossplane core can
    write back stale for a moment (``modelplane.readiness``, rule 4).
    """
    rsp.desired.composite.ready = fnv1.READY_TRUE if ready else fnv1.READY_FALSE
    rsp.desired.composite.resource.get_or_create_struct("status")[VERDICT_FIELD] = ready
