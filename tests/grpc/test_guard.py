"""Over gRPC, a function never answers with a bare error: a bug is a Fatal result, bad input a warning.

Each test serves a runner on a loopback port with grpcio's asyncio server (as
``crossplane.function.runtime.serve`` does) and calls it through a real channel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from compose_model_endpoint.fn import FunctionRunner as EndpointRunner
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.runner import ComposeRunner
from modelplane.kinds import API_VERSION

_TIMEOUT = 30.0


async def _serve_and_call(
    runner: grpcv1.FunctionRunnerServiceServicer, req: fnv1.RunFunctionRequest
) -> fnv1.RunFunctionResponse:
    server = grpc.aio.server()
    grpcv1.add_FunctionRunnerServiceServicer_to_server(runner, server)  # type: ignore[no-untyped-call]  # generated code is untyped
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]  # generated stub is untyped
            rsp: fnv1.RunFunctionResponse = await stub.RunFunction(req, timeout=_TIMEOUT)
            return rsp
    finally:
        await server.stop(None)


def _call(runner: grpcv1.FunctionRunnerServiceServicer, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    return asyncio.run(_serve_and_call(runner, req))


def _request(xr: dict[str, Any], **observed: dict[str, Any]) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="guard"))
    req.observed.composite.resource.CopyFrom(resource.dict_to_struct(xr))
    for key, obj in observed.items():
        req.observed.resources[key].resource.CopyFrom(resource.dict_to_struct(obj))
    return req


def _raising(
    err: Exception,
) -> Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse, Ledger, object], None]:
    def compose(_req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, _ledger: Ledger, _log: object) -> None:
        rsp.desired.resources["half-written"].resource.update({"kind": "Thing"})
        raise err

    return compose


@pytest.mark.parametrize(
    ("err", "want"),
    [
        pytest.param(KeyError("spec"), "KeyError at test_guard.py:", id="key-error"),
        pytest.param(TypeError("'int' object is not iterable"), "TypeError at test_guard.py:", id="type-error"),
        pytest.param(ValueError("x" * 10_000), "(10000 characters)", id="huge-message-cut"),
    ],
)
def test_an_exception_becomes_a_fatal_result_naming_it(err: Exception, want: str) -> None:
    runner = ComposeRunner(_raising(err))
    rsp = _call(runner, _request({"apiVersion": API_VERSION, "kind": "ModelEndpoint", "metadata": {"name": "e"}}))
    assert rsp.meta.tag == "guard"
    assert [fnv1.Severity.Name(r.severity) for r in rsp.results] == ["SEVERITY_FATAL"]
    message = rsp.results[0].message
    assert message.startswith(f"internal error, nothing was changed: {type(err).__name__}")
    assert want in message
    assert len(message) < 1000
    # Crossplane applies nothing of a Fatal response; it carries nothing half-written either.
    assert "half-written" not in rsp.desired.resources


def test_a_malformed_observed_resource_is_a_warning_over_grpc() -> None:
    xr = {
        "apiVersion": API_VERSION,
        "kind": "ModelEndpoint",
        "metadata": {"name": "e", "namespace": "default"},
        "spec": {"url": "http://10.0.0.1:8000/"},
    }
    backend = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "Backend", "status": {"conditions": 3}}
    rsp = _call(EndpointRunner(), _request(xr, backend=backend))
    severities = {fnv1.Severity.Name(r.severity) for r in rsp.results}
    assert "SEVERITY_FATAL" not in severities
    warnings = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]
    assert any("'backend'" in w and "status.conditions: expected a list, got 3" in w for w in warnings), warnings
    assert "backend" in rsp.desired.resources
