"""What every fuzz target shares: the hypothesis profiles, calling a function, judging its answer.

``MODELPLANE_FUZZ`` picks the profile: ``ci`` (the default: 2,000 examples per
function, derandomized so every run tries the same inputs) or ``deep``
(``make fuzz``: random, ``MODELPLANE_FUZZ_EXAMPLES`` examples per function,
20,000 unless set, failures kept in the example database to replay first).
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Coroutine
from types import ModuleType
from typing import Any

import structlog
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from hypothesis import HealthCheck, settings

from modelplane.fnkit.runner import ComposeRunner
from modelplane.kinds import BY_KIND

CI_EXAMPLES = 2000
DEEP_EXAMPLES = 20000

# A call takes milliseconds and some inputs are large: no deadline, no complaint about slow or big data.
_COMMON = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    print_blob=True,
)
settings.register_profile(
    "modelplane-fuzz-ci", parent=_COMMON, max_examples=CI_EXAMPLES, derandomize=True, database=None
)
settings.register_profile(
    "modelplane-fuzz-deep", parent=_COMMON, max_examples=int(os.environ.get("MODELPLANE_FUZZ_EXAMPLES", DEEP_EXAMPLES))
)


def profile() -> settings:
    """The fuzz profile ``MODELPLANE_FUZZ`` names (``ci`` by default)."""
    name = os.environ.get("MODELPLANE_FUZZ", "ci")
    return settings.get_profile(f"modelplane-fuzz-{name}")


Compose = Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse, structlog.stdlib.BoundLogger], None]


def _module(kind: str) -> ModuleType:
    return importlib.import_module(f"{BY_KIND[kind].module}.fn")


def composer(kind: str) -> Compose:
    """The function's compose, in-process and unguarded, each call by a fresh runner (nothing kept between calls)."""
    runner_type: Callable[[], ComposeRunner] = _module(kind).FunctionRunner
    return lambda req, rsp, log: runner_type().compose(req, rsp, log)


def runner(kind: str) -> grpcv1.FunctionRunnerServiceServicer:
    """A fresh FunctionRunner of ``kind``'s function."""
    function_runner: grpcv1.FunctionRunnerServiceServicer = _module(kind).FunctionRunner()
    return function_runner


def quiet_logger() -> structlog.stdlib.BoundLogger:
    """The SDK's logger, silenced (thousands of calls would flood the output)."""
    logging.configure(logging.Level.DISABLED)
    log: structlog.stdlib.BoundLogger = logging.get_logger()
    return log


def call(compose: Compose, req: fnv1.RunFunctionRequest, log: structlog.stdlib.BoundLogger) -> fnv1.RunFunctionResponse:
    """Answer ``req`` in-process as the shared runner does, but let any exception out."""
    rsp = response.to(req)
    compose(req, rsp, log)
    return rsp


def call_runner(
    function_runner: grpcv1.FunctionRunnerServiceServicer, req: fnv1.RunFunctionRequest
) -> fnv1.RunFunctionResponse:
    """Answer ``req`` through the function's gRPC servicer, as the server would."""
    # The generated servicer is untyped; name the call's type once here.
    run: Callable[[fnv1.RunFunctionRequest, None], Coroutine[Any, Any, object]] = function_runner.RunFunction
    rsp = asyncio.run(run(req, None))
    assert isinstance(rsp, fnv1.RunFunctionResponse)
    return rsp


def problems(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> list[str]:
    """What makes ``rsp`` not a valid answer to ``req``; empty when it is one."""
    out = []
    again = fnv1.RunFunctionResponse.FromString(rsp.SerializeToString())
    if again != rsp:
        out.append("the response does not survive serialization")
    if rsp.meta.tag != req.meta.tag:
        out.append(f"tag {rsp.meta.tag!r}, not the request's {req.meta.tag!r}")
    for c in rsp.conditions:
        if not c.type or not c.reason or c.status == fnv1.STATUS_CONDITION_UNSPECIFIED:
            out.append(f"condition without a type, status or reason: {c}")
    for r in rsp.results:
        if r.severity in (fnv1.SEVERITY_UNSPECIFIED, fnv1.SEVERITY_FATAL) or not r.message:
            out.append(f"result {fnv1.Severity.Name(r.severity)} {r.message[:200]!r}")
    for name, desired in rsp.desired.resources.items():
        if name in req.observed.resources:
            continue  # kept as observed: however it looks, it is what runs
        fields = desired.resource.fields
        for key in ("apiVersion", "kind"):
            if fields[key].WhichOneof("kind") != "string_value" if key in fields else True:
                out.append(f"desired resource {name} has no string {key}")
    return out


def dropped(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> list[str]:
    """Observed composed resources missing from the desired state (Crossplane would delete them)."""
    return sorted(k for k in req.observed.resources if k not in rsp.desired.resources)


def _readiness(struct: Any) -> str:
    """ "True" or "False" when every Ready condition of ``struct`` says so, else "" (absent, damaged, mixed)."""
    status = struct.fields.get("status")
    body = status.struct_value if status is not None and status.HasField("struct_value") else None
    conditions = body.fields.get("conditions") if body is not None else None
    if conditions is None or not conditions.HasField("list_value"):
        return ""
    said = set()
    for item in conditions.list_value.values:
        fields = item.struct_value.fields if item.HasField("struct_value") else {}
        kind, state = fields.get("type"), fields.get("status")
        if kind is not None and kind.HasField("string_value") and kind.string_value == "Ready":
            said.add(state.string_value if state is not None and state.HasField("string_value") else "")
    return said.pop() if len(said) == 1 and said <= {"True", "False"} else ""


def turned(before: fnv1.RunFunctionRequest, after: fnv1.RunFunctionRequest) -> list[str]:
    """Observed composed resources whose readable Ready condition flipped between True and False."""
    out = []
    for key, was in before.observed.resources.items():
        now = after.observed.resources.get(key)
        if now is None:
            continue
        old, new = _readiness(was.resource), _readiness(now.resource)
        if old and new and old != new:
            out.append(key)
    return sorted(out)
