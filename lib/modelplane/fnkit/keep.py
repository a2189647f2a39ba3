"""Never drop what runs: carry observed composed resources into the desired state."""

from __future__ import annotations

from collections.abc import Iterable

from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from structlog.stdlib import BoundLogger

from modelplane.conditions import Condition, Status
from modelplane.fnkit.status import set_conditions, set_ready

# Fields the API server or a controller owns; desired state must not claim them.
_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences")


def keep_observed(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, names: Iterable[str] | None = None
) -> int:
    """Copy observed composed resources (all, or ``names``) into the desired state unchanged.

    Crossplane deletes a composed resource missing from the desired state, so
    when an input is missing or invalid a function keeps what it composed
    before. Status and server-owned metadata are left out. Resources already
    desired are not touched. Returns how many resources were kept.
    """
    wanted = set(req.observed.resources) if names is None else set(names)
    kept = 0
    for name in sorted(wanted):
        observed = req.observed.resources.get(name)
        if observed is None or name in rsp.desired.resources:
            continue
        # Copied as a Struct, not through a dict: the same object, at a fraction of the cost.
        kept_struct = rsp.desired.resources[name].resource
        kept_struct.CopyFrom(observed.resource)
        if "status" in kept_struct.fields:
            del kept_struct.fields["status"]
        meta = kept_struct.fields.get("metadata")
        if meta is not None and meta.WhichOneof("kind") == "struct_value":
            for key in _SERVER_METADATA:
                if key in meta.struct_value.fields:
                    del meta.struct_value.fields[key]
        kept += 1
    return kept


def hold(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, log: BoundLogger, why: Condition) -> None:
    """Keep everything composed before, report ``why`` and mark the XR not ready.

    For when an input is missing or invalid and the function cannot decide
    anything: a False condition is also a Warning result naming what was kept.
    """
    kept = keep_observed(req, rsp)
    log.info("keeping composed resources", reason=str(why.reason), message=why.message, kept=kept)
    if why.status == Status.FALSE:
        response.warning(rsp, f"{why.message}; kept {kept} composed resource(s) unchanged")
    set_conditions(rsp, why)
    set_ready(rsp, ready=False)
