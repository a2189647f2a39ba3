"""What this machine needs to build the function images (tools/images.sh) and run them (tests/images/oci.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conformance.cli import in_ci

REPO = Path(__file__).resolve().parents[2]
# A cold build makes the base root filesystem with debootstrap: minutes, not seconds.
BUILD_TIMEOUT = 1200


def missing() -> list[str]:
    """What this machine lacks to build and run the images; empty when nothing."""
    problems = []
    if os.geteuid() != 0:
        problems.append("root (debootstrap, chroot, overlay mounts)")
    problems += [f"{tool} on PATH" for tool in ("unshare", "mount", "chroot", "tar") if shutil.which(tool) is None]
    filesystems = Path("/proc/filesystems")
    if not filesystems.is_file() or "overlay" not in filesystems.read_text():
        problems.append("overlayfs")
    return problems


def require() -> None:
    """Skip without what building and running the images needs, except in CI where that fails."""
    problems = missing()
    if not problems:
        return
    what = "building and running the function images needs " + ", ".join(problems)
    if in_ci():
        pytest.fail(f"CI is set but {what}")
    pytest.skip(what)


@dataclass(frozen=True)
class Built:
    """What the scripts wrote, and a directory to unpack layers into (each digest once)."""

    images: Path
    packages: Path
    layers: Path


def run_script(script: str, *args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> str:
    """Run a project script with this interpreter as PYTHON; fail with its output unless it succeeds."""
    proc = subprocess.run(
        ["bash", str(cwd / script), *args],
        env={**os.environ, "PYTHON": sys.executable, **(env or {})},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, f"{script} failed:\n{proc.stderr[-4000:]}"
    return proc.stdout
