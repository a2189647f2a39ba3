"""Build and run the Go oracle (main.go) that evaluates selectors with the real Kubernetes code.

The binary is built with the Go toolchain into a cache outside the repository, under a name
that hashes go.mod, go.sum and main.go, so it is rebuilt only when one of them changes. Modules
come from the Go module proxy; go.sum pins them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCES = ("go.mod", "go.sum", "main.go")
BUILD_TIMEOUT = 1200  # seconds: the first build downloads and compiles the Kubernetes libraries


class OracleUnavailable(Exception):  # noqa: N818 (a condition, not an error of the code under test)
    """The Go toolchain is missing, so the oracle cannot be built."""


def tools_dir() -> Path:
    """``$MODELPLANE_TOOLS_DIR``, else ``~/.cache/modelplane/tools`` (as tools/crossplane.sh)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("MODELPLANE_TOOLS_DIR") or Path(cache) / "modelplane" / "tools")


def binary_path() -> Path:
    """Where the oracle for the current sources lives once built."""
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes() + b"\0")
    return tools_dir() / f"celparity-{digest.hexdigest()[:16]}" / "celparity"


def build() -> Path:
    """Return the oracle binary, building it first when needed.

    Raises:
        OracleUnavailable: ``go`` is not on PATH.
        subprocess.CalledProcessError: The build failed.

    """
    binary = binary_path()
    if binary.is_file():
        return binary
    go = shutil.which(os.environ.get("GO", "go"))
    if go is None:
        msg = "the Go toolchain is not on PATH; install Go >= 1.25 to build the CEL parity oracle"
        raise OracleUnavailable(msg)
    binary.parent.mkdir(parents=True, exist_ok=True)
    # Build into a scratch file and rename, so a concurrent or interrupted build never leaves a
    # half-written binary behind.
    with tempfile.TemporaryDirectory(dir=binary.parent) as scratch:
        target = Path(scratch) / "celparity"
        env = {**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false", "CGO_ENABLED": "0"}
        subprocess.run(
            [go, "build", "-trimpath", "-o", str(target), "."],
            cwd=HERE,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
        )
        target.replace(binary)
    return binary


def evaluate(binary: Path, cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Run the oracle on the cases; its answers by case id."""
    proc = subprocess.run(
        [str(binary)], input=json.dumps(cases), capture_output=True, text=True, check=True, timeout=600
    )
    return {answer["id"]: answer for answer in json.loads(proc.stdout)}


def declarations(binary: Path) -> list[str]:
    """The overloads the real environment declares, one line each."""
    proc = subprocess.run([str(binary), "-decls"], capture_output=True, text=True, check=True, timeout=120)
    return proc.stdout.splitlines()
