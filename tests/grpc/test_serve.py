"""Each function, started as its own process, serves gRPC and answers a RunFunction."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import json_format

from modelplane.kinds import API_VERSION, KINDS, Kind
from tests.grpc.certs import write_tls_dir
from tests.loopback import free_port, wait_listening

_START_TIMEOUT = 30.0


@contextmanager
def _serving(kind: Kind, *flags: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", kind.module, "--address", address, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield address, proc
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _request(kind: Kind) -> fnv1.RunFunctionRequest:
    metadata = {"name": "probe", "namespace": "default"} if kind.namespaced else {"name": "probe"}
    xr = {"apiVersion": API_VERSION, "kind": kind.kind, "metadata": metadata, "spec": {}}
    return fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="probe"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )


def _wait_listening(address: str, proc: subprocess.Popen[bytes]) -> None:
    if wait_listening(address, lambda: proc.poll() is None, _START_TIMEOUT):
        return
    stderr = proc.stderr.read().decode() if proc.stderr and proc.poll() is not None else ""
    pytest.fail(f"function did not listen on {address}: {stderr}")


def _call(channel: grpc.Channel, kind: Kind) -> fnv1.RunFunctionResponse:
    stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]  # generated stub is untyped
    rsp: fnv1.RunFunctionResponse = stub.RunFunction(_request(kind), timeout=_START_TIMEOUT)
    return rsp


def _assert_answered(kind: Kind, rsp: fnv1.RunFunctionResponse) -> None:
    got = json_format.MessageToDict(rsp)
    assert got["meta"]["tag"] == "probe"
    # Every function answers for its own kind: a result that names it, or Ready.
    messages = " ".join(r.get("message", "") for r in got.get("results", []))
    conditions = [c["type"] for c in got.get("conditions", [])]
    assert kind.kind in messages or conditions, got


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.function) for k in KINDS])
def test_serves_insecure(kind: Kind) -> None:
    with _serving(kind, "--insecure") as (address, proc), grpc.insecure_channel(address) as channel:
        _wait_listening(address, proc)
        _assert_answered(kind, _call(channel, kind))


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.function) for k in KINDS[:1] + KINDS[-1:]])
def test_serves_mtls(kind: Kind, tmp_path: Path) -> None:
    ca, client = write_tls_dir(tmp_path)
    creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=client.key, certificate_chain=client.cert)
    # Each channel gets its own connection: gRPC would otherwise share one between them.
    own = [("grpc.use_local_subchannel_pool", 1)]
    with _serving(kind, "--tls-certs-dir", str(tmp_path)) as (address, proc):
        _wait_listening(address, proc)
        with grpc.secure_channel(address, creds, options=own) as channel:
            _assert_answered(kind, _call(channel, kind))
        # A caller without a client certificate is refused.
        anonymous = grpc.ssl_channel_credentials(root_certificates=ca)
        with grpc.secure_channel(address, anonymous, options=own) as channel, pytest.raises(grpc.RpcError):
            grpcv1.FunctionRunnerServiceStub(channel).RunFunction(_request(kind), timeout=5)  # type: ignore[no-untyped-call]  # generated stub is untyped


@pytest.mark.parametrize(
    ("flags", "want"),
    [
        pytest.param((), "no TLS certificates", id="no-credentials"),
        pytest.param(("--tls-certs-dir", "/nonexistent"), "cannot serve", id="missing-certs"),
    ],
)
def test_start_failure_exits_nonzero(flags: tuple[str, ...], want: str) -> None:
    kind = KINDS[0]
    with _serving(kind, *flags) as (_, proc):
        deadline = time.monotonic() + _START_TIMEOUT
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.returncode not in (None, 0)
        assert proc.stderr is not None
        assert want in proc.stderr.read().decode()
