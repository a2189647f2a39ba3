"""The same inputs give the same images, digest for digest.

Two builds by ``tools/images.sh`` of one snapshot of the sources (the working
tree may change under a long test run) with one SOURCE_DATE_EPOCH must write
images with equal digests: the function layers, the configs and the
manifests are made again each time. The base layer comes from the cache
both times, so it is checked on its own: tarring the cached root filesystem
again with ``tools/images/layer.sh`` must give the very bytes the images
carry. (That two cold builds of the base agree is a property of the Debian
archive on the day; README records the check.)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.images.host import REPO, Built, run_script

# What tools/images.sh reads: the project's wheel sources, the functions' package metadata and the tools.
SNAPSHOT = ("pyproject.toml", "README.md", "lib", "schemas/modelplane_models", "functions", "tools")
EPOCH = "1767225600"


def _snapshot(into: Path) -> Path:
    for rel in SNAPSHOT:
        src, dst = REPO / rel, into / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), symlinks=True)
        else:
            shutil.copy2(src, dst)
    return into


def _build(src: Path, out: Path) -> list[dict[str, Any]]:
    run_script("tools/images.sh", str(out), env={"SOURCE_DATE_EPOCH": EPOCH}, cwd=src)
    images: list[dict[str, Any]] = json.loads((out / "images.json").read_text())
    return images


def _cached_base(digest: str) -> Path:
    cache = Path(os.environ.get("MODELPLANE_CACHE_DIR") or Path.home() / ".cache" / "modelplane")
    if "MODELPLANE_CACHE_DIR" not in os.environ and os.environ.get("XDG_CACHE_HOME"):
        cache = Path(os.environ["XDG_CACHE_HOME"]) / "modelplane"
    for layer in sorted(cache.glob("images/base-*/base.tar.gz")):
        if "sha256:" + hashlib.sha256(layer.read_bytes()).hexdigest() == digest:
            return layer.parent
    msg = f"no cached base layer with digest {digest} under {cache}/images"
    raise LookupError(msg)


@pytest.mark.usefixtures("built")
def test_two_builds_of_the_same_sources_give_the_same_digests(tmp_path: Path) -> None:
    src = _snapshot(tmp_path / "src")
    first, second = _build(src, tmp_path / "first"), _build(src, tmp_path / "second")
    assert [(i["tag"], i["digest"]) for i in first] == [(i["tag"], i["digest"]) for i in second]
    assert len({i["digest"] for i in first}) == len(first)
    for a, b in zip(first, second, strict=True):
        assert (tmp_path / "first" / a["file"]).read_bytes() == (tmp_path / "second" / b["file"]).read_bytes()


def test_the_cached_base_tars_to_the_same_layer(built: Built, tmp_path: Path) -> None:
    (image,) = json.loads((built.images / "images.json").read_text())[:1]
    digest = image["layers"][0]["digest"]
    base = _cached_base(digest)
    again = tmp_path / "base.tar.gz"
    script = 'source "$1" && write_layer "$2" "$3" "$4"'
    layer_sh = REPO / "tools" / "images" / "layer.sh"
    epoch = _base_epoch()
    subprocess.run(["bash", "-c", script, "bash", layer_sh, base / "rootfs", epoch, again], check=True, timeout=600)
    assert "sha256:" + hashlib.sha256(again.read_bytes()).hexdigest() == digest


def _base_epoch() -> str:
    """BASE_EPOCH of tools/images.sh."""
    for line in (REPO / "tools" / "images.sh").read_text().splitlines():
        if line.startswith("readonly BASE_EPOCH="):
            return line.split("=", 1)[1]
    msg = "tools/images.sh defines no BASE_EPOCH"
    raise LookupError(msg)
