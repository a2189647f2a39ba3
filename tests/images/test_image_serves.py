"""Each function's xpkg, run as a container runtime would run it, answers RunFunction as the in-process function does.

For every function: unpack its package (the xpkg is the runtime image,
package layer on top), start the config's entrypoint as the config's user in
the image's own root filesystem (read-only; tests/images/oci.py), with
Crossplane's TLS secret laid over it at /tls/server and named by
TLS_SERVER_CERTS_DIR, and render an example XR of its kind through it over
mTLS on loopback. Every RunFunction the image answered must equal the
in-process function's answer to the same request, and the render the same
output. A caller without a client certificate is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import json_format

from modelplane.kinds import KINDS, Kind
from modelplane.render import RenderInputs, render
from modelplane.render.runners import load_runner
from modelplane.repo import load_composition
from tests.golden.cases import cases, render_output
from tests.grpc.certs import Pem, write_tls_dir
from tests.images import oci
from tests.images.host import Built
from tests.loopback import free_port, wait_listening

_START_TIMEOUT = 60.0
_CALL_TIMEOUT = 60.0
# Where Crossplane mounts a function's server certificates, and the variable that says so.
TLS_DIR = "/tls/server"
TLS_ENV = "TLS_SERVER_CERTS_DIR"
# The user Crossplane's function Deployments run as unless a DeploymentRuntimeConfig says otherwise.
CROSSPLANE_RUN_AS = ("2000", "2000")


class _Recording(grpcv1.FunctionRunnerServiceServicer):
    """A runner that forwards each call to a served function and keeps what it asked and got."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]  # generated stub is untyped
        self.calls: list[tuple[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse]] = []

    async def RunFunction(self, request: fnv1.RunFunctionRequest, _context: object) -> fnv1.RunFunctionResponse:
        sent = fnv1.RunFunctionRequest()
        sent.CopyFrom(request)
        rsp: fnv1.RunFunctionResponse = self._stub.RunFunction(sent, timeout=_CALL_TIMEOUT)
        self.calls.append((sent, rsp))
        return rsp


@cache
def inputs(kind: Kind) -> RenderInputs:
    """An example XR of ``kind`` with its fleet: the first golden case of the kind, else one another kind composes."""
    every = cases()
    for case in every:
        if case.xr["kind"] == kind.kind:
            return RenderInputs(
                xr=case.xr, composition=load_composition(kind.kind), observed=case.observed, required=case.fleet
            )
    for case in every:
        for composed in render_output(case).composed:
            if composed.get("kind") == kind.kind:
                return RenderInputs(xr=composed, composition=load_composition(kind.kind), required=case.fleet)
    msg = f"no example XR of kind {kind.kind}"
    raise LookupError(msg)


def _wait_listening(address: str, proc: object, log: Path) -> None:
    def alive() -> bool:
        getattr(proc, "poll", lambda: None)()
        return getattr(proc, "returncode", None) is None

    if wait_listening(address, alive, _START_TIMEOUT):
        return
    pytest.fail(f"the image did not listen on {address}:\n{log.read_text()[-4000:]}")


@contextmanager
def _serving(
    built: Built, kind: Kind, tmp_path: Path, *, as_user: tuple[str, str] | None = None
) -> Iterator[tuple[str, bytes, Pem]]:
    """Run ``kind``'s package as its runtime; yield its address and the CA and client PEMs to call it with."""
    image = oci.read(built.packages / f"function-{kind.function}.xpkg")
    layers = oci.unpack(image, built.layers)
    volume = tmp_path / "volume"
    ca, client = write_tls_dir(volume / TLS_DIR.lstrip("/"))
    address = f"127.0.0.1:{free_port()}"
    log = tmp_path / "function.log"
    with oci.run(
        image,
        layers,
        tmp_path / "root",
        log,
        args=("--address", address),
        env={TLS_ENV: TLS_DIR},
        volume=volume,
        as_user=as_user,
    ) as proc:
        _wait_listening(address, proc, log)
        yield address, ca, client


def _channel(address: str, ca: bytes, client: Pem | None) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(
        root_certificates=ca,
        private_key=client.key if client else None,
        certificate_chain=client.cert if client else None,
    )
    # Each channel its own connection: gRPC would otherwise share one between them.
    return grpc.secure_channel(address, creds, options=[("grpc.use_local_subchannel_pool", 1)])


def _in_process(kind: Kind, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    # The generated servicer is untyped; name the call's type once here.
    run: Callable[[fnv1.RunFunctionRequest, None], Coroutine[Any, Any, object]] = load_runner(
        kind.function_ref
    ).RunFunction
    rsp = asyncio.run(run(req, None))
    assert isinstance(rsp, fnv1.RunFunctionResponse)
    return rsp


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.function) for k in KINDS])
def test_image_answers_as_in_process(kind: Kind, built: Built, tmp_path: Path) -> None:
    want = inputs(kind)
    with _serving(built, kind, tmp_path) as (address, ca, client):
        with _channel(address, ca, client) as channel:
            remote = _Recording(channel)
            got = render(replace(want, functions={kind.function_ref: remote}))
        with _channel(address, ca, None) as anonymous, pytest.raises(grpc.RpcError):
            grpcv1.FunctionRunnerServiceStub(anonymous).RunFunction(remote.calls[0][0], timeout=10)  # type: ignore[no-untyped-call]  # generated stub is untyped
    assert remote.calls, "the render never called the function"
    for req, rsp in remote.calls:
        assert json_format.MessageToDict(rsp) == json_format.MessageToDict(_in_process(kind, req))
    assert got == render(want)


def test_image_serves_as_crossplanes_default_user(built: Built, tmp_path: Path) -> None:
    # Crossplane's function Deployments run as 2000:2000, not the image's user: nothing may depend on who runs it.
    kind = KINDS[-1]
    with (
        _serving(built, kind, tmp_path, as_user=CROSSPLANE_RUN_AS) as (address, ca, client),
        _channel(address, ca, client) as channel,
    ):
        got = render(replace(inputs(kind), functions={kind.function_ref: _Recording(channel)}))
    assert got == render(inputs(kind))
