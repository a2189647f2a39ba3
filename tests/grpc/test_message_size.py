"""A served function takes fleet-sized requests: over gRPC's default 4 MiB, up to its own limit."""

from __future__ import annotations

import grpc
import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from bench.fleet import FleetSize, request
from modelplane.fnkit.serve import MAX_MESSAGE_BYTES
from modelplane.kinds import API_VERSION, BY_KIND
from tests.grpc.test_serve import _serving, _wait_listening

_GRPC_DEFAULT_LIMIT = 4 * 1024 * 1024
_DEPLOYMENT = BY_KIND["ModelDeployment"]


def _run(address: str, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    with grpc.insecure_channel(address) as channel:
        stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]  # generated stub is untyped
        rsp: fnv1.RunFunctionResponse = stub.RunFunction(req, timeout=60)
        return rsp


def test_a_fleet_over_the_default_limit_is_answered() -> None:
    # A deployment of 1,000 running replicas, its own required and observed: over gRPC's default 4 MiB.
    req = request(FleetSize(clusters=20, others=0, own_kept=1000, own_new=0))
    assert req.ByteSize() > _GRPC_DEFAULT_LIMIT
    with _serving(_DEPLOYMENT, "--insecure") as (address, proc):
        _wait_listening(address, proc)
        rsp = _run(address, req)
    assert rsp.meta.tag == "bench"
    assert [c.message for c in rsp.conditions if c.type == "Scheduled"] == ["placed 1000 of 1000"]


def test_a_request_over_the_limit_is_refused() -> None:
    xr = {
        "apiVersion": API_VERSION,
        "kind": _DEPLOYMENT.kind,
        "metadata": {"name": "huge", "namespace": "default", "annotations": {"pad": "x" * MAX_MESSAGE_BYTES}},
    }
    req = fnv1.RunFunctionRequest(observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))))
    with _serving(_DEPLOYMENT, "--insecure") as (address, proc):
        _wait_listening(address, proc)
        with pytest.raises(grpc.RpcError) as err:
            _run(address, req)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
