"""Run the real ``crossplane render`` against functions served from this process.

Reusable by any test that wants the CLI's verdict on a function:

    with serve_functions({"toy": ToyRunner()}) as targets:
        fns = tmp / "functions.yaml"
        fns.write_text(functions_manifest(targets))
        proc = run_render(binary, engine, xr, composition, fns, "--include-function-results")

``engine`` is a Crossplane core binary: the v2.5 CLI renders by running its
XR reconciler (``crossplane internal render``). Each runner is served over
real gRPC (grpc.aio, insecure, 127.0.0.1 on a free port) in a background
thread, and named in a ``pkg.crossplane.io/v1`` Function manifest with the
``Development`` runtime, so the engine dials it instead of a container.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import grpc
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from modelplane.render import goyaml

REPO = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO / "tools" / "crossplane.sh"
E2E_VERSIONS = REPO / "tools" / "e2e" / "versions.env"
RUNTIME_ANNOTATION = "render.crossplane.io/runtime"
TARGET_ANNOTATION = "render.crossplane.io/runtime-development-target"


def _pinned(path: Path, pattern: str) -> str:
    m = re.search(pattern, path.read_text(encoding="utf-8"), re.MULTILINE)
    if m is None:
        msg = f"cannot find the pinned version in {path}"
        raise RuntimeError(msg)
    return m.group(1)


def pinned_version() -> str:
    """The CLI version tools/crossplane.sh builds."""
    return _pinned(INSTALL_SCRIPT, r'^readonly version="(v[0-9][^"]*)"')


def pinned_engine_version() -> str:
    """The Crossplane core version whose render engine ``crossplane render`` runs (tools/e2e/versions.env)."""
    return _pinned(E2E_VERSIONS, r"^CROSSPLANE_CORE_VERSION=(v[0-9]\S*)")


def _tools_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("MODELPLANE_TOOLS_DIR") or Path(cache) / "modelplane" / "tools")


def _binary(variable: str, default: Path) -> Path | None:
    path = Path(os.environ[variable]) if os.environ.get(variable) else default
    return path if path.is_file() else None


def crossplane_binary() -> Path | None:
    """$CROSSPLANE, else where tools/crossplane.sh installs the pinned CLI; None when absent."""
    return _binary("CROSSPLANE", _tools_dir() / f"crossplane-cli-{pinned_version()}" / "crossplane")


def crossplane_engine() -> Path | None:
    """$CROSSPLANE_ENGINE, else where ``tools/crossplane.sh engine`` installs Crossplane core; None when absent."""
    return _binary("CROSSPLANE_ENGINE", _tools_dir() / f"crossplane-core-{pinned_engine_version()}" / "crossplane")


class _Server:
    """One grpc.aio server per runner, on an event loop in a daemon thread."""

    def __init__(self, runners: Mapping[str, grpcv1.FunctionRunnerServiceServicer]) -> None:
        self._runners = runners
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[grpc.aio.Server] = []

    def start(self) -> dict[str, str]:
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)

    async def _start(self) -> dict[str, str]:
        targets: dict[str, str] = {}
        for name, runner in sorted(self._runners.items()):
            server = grpc.aio.server()
            grpcv1.add_FunctionRunnerServiceServicer_to_server(runner, server)  # type: ignore[no-untyped-call]  # generated gRPC code is untyped
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            self._servers.append(server)
            targets[name] = f"127.0.0.1:{port}"
        return targets

    def stop(self) -> None:
        async def _stop() -> None:
            for s in self._servers:
                await s.stop(grace=None)

        asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()


@contextlib.contextmanager
def serve_functions(runners: Mapping[str, grpcv1.FunctionRunnerServiceServicer]) -> Iterator[dict[str, str]]:
    """Serve each runner over insecure gRPC on 127.0.0.1; yield functionRef name -> target."""
    server = _Server(runners)
    targets = server.start()
    try:
        yield targets
    finally:
        server.stop()


def functions_manifest(targets: Mapping[str, str]) -> str:
    """A Function per name with the Development runtime pointing at its target."""
    docs = []
    for name, target in sorted(targets.items()):
        fn = {
            "apiVersion": "pkg.crossplane.io/v1",
            "kind": "Function",
            "metadata": {
                "name": name,
                "annotations": {RUNTIME_ANNOTATION: "Development", TARGET_ANNOTATION: target},
            },
            "spec": {"package": f"xpkg.crossplane.io/modelplane/{name}:v0.0.0"},
        }
        docs.append("---\n" + goyaml.dump_document(fn))
    return "".join(docs)


def run_render(
    binary: Path, engine: Path, xr: Path, composition: Path, functions: Path, *flags: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``crossplane render XR COMPOSITION FUNCTIONS FLAGS...`` with ``engine`` and capture its output."""
    return subprocess.run(
        [str(binary), "render", f"--crossplane-binary={engine}", str(xr), str(composition), str(functions), *flags],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
