"""Read an image tarball (or an xpkg, which is one), unpack its layers and run its entrypoint, without Docker.

Both ``tools/images.sh`` and ``crossplane xpkg build`` write the ``docker save``
layout: ``manifest.json`` naming a config blob and the gzipped layer blobs,
base first, each named by its digest. ``run`` does what a container runtime
does with them, with the kernel's own pieces: the layers stacked read-only
by overlayfs (plus one more on top standing in for Crossplane's TLS secret
volume), a /proc and a minimal /dev, and the config's entrypoint, user and
environment through ``chroot``, all in a private mount namespace that ends
with the process. The network is the host's: the function is told to
listen on a loopback address.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What `run` does before exec'ing the entrypoint, inside `unshare --mount`:
# $1 the lower directories (top first), $2 the mount point, $3 the user, $4 its group.
_SETUP = r"""
lower="$1" root="$2" user="$3" group="$4"; shift 4
mount -t overlay overlay -o "lowerdir=$lower" "$root" &&
mount -t proc -o nosuid,nodev,noexec proc "$root/proc" &&
mount -t tmpfs -o mode=755,nosuid,noexec tmpfs "$root/dev" &&
for d in null zero random urandom; do touch "$root/dev/$d" && mount --bind "/dev/$d" "$root/dev/$d" || exit 1; done &&
exec chroot --userspec="$user:$group" --groups="$group" "$root" "$@"
"""
_STOP_TIMEOUT = 15.0


@dataclass(frozen=True)
class Image:
    """One image tarball: its config and its layer blobs, base first."""

    path: Path
    config: dict[str, Any]
    layers: tuple[str, ...]

    @property
    def digests(self) -> tuple[str, ...]:
        """The layers' digests (their blob names), base first."""
        return tuple("sha256:" + name.removesuffix(".tar.gz") for name in self.layers)

    def blob(self, name: str) -> bytes:
        """One blob of the tarball, as stored (a layer is gzip-compressed)."""
        with tarfile.open(self.path) as tar:
            f = tar.extractfile(name)
            if f is None:
                msg = f"{self.path}: {name} is not a file"
                raise ValueError(msg)
            return f.read()

    def members(self, name: str) -> list[tarfile.TarInfo]:
        """The entries of one layer."""
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(self.blob(name)))) as layer:
            return layer.getmembers()


def read(path: Path) -> Image:
    """Read an image tarball's manifest and config."""
    with tarfile.open(path) as tar:
        manifest_file = tar.extractfile("manifest.json")
        if manifest_file is None:
            msg = f"{path}: no manifest.json"
            raise ValueError(msg)
        (manifest,) = json.load(manifest_file)
        config_file = tar.extractfile(manifest["Config"])
        if config_file is None:
            msg = f"{path}: no config {manifest['Config']}"
            raise ValueError(msg)
        config: dict[str, Any] = json.load(config_file)
    return Image(path=path, config=config, layers=tuple(manifest["Layers"]))


def unpack(image: Image, into: Path) -> list[Path]:
    """Extract each layer of ``image`` into ``into/<digest>`` (once per digest); return the directories, base first.

    A layer's bytes must hash to the digest it is named by, and it must hold no
    whiteout (none of these images deletes a file of a lower layer, so none is
    expected and ``run`` does not interpret them).
    """
    dirs = []
    for name, digest in zip(image.layers, image.digests, strict=True):
        target = into / digest.removeprefix("sha256:")
        if not target.is_dir():
            blob = image.blob(name)
            if "sha256:" + hashlib.sha256(blob).hexdigest() != digest:
                msg = f"{image.path}: layer {name} does not match its digest"
                raise ValueError(msg)
            scratch = target.with_suffix(".partial")
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir(parents=True)
            subprocess.run(["tar", "-xz", "--numeric-owner", "-C", str(scratch)], input=blob, check=True)
            whiteouts = [str(p) for p in scratch.rglob(".wh.*")]
            if whiteouts:
                msg = f"{image.path}: layer {name} has whiteouts {whiteouts[:3]}"
                raise ValueError(msg)
            # The layer's root becomes the image's / where it is on top; a runtime makes that 0755.
            scratch.chmod(0o755)
            scratch.rename(target)
        dirs.append(target)
    return dirs


def argv(image: Image) -> list[str]:
    """The command a runtime starts: the config's entrypoint, then its cmd."""
    cfg = image.config["config"]
    return [*(cfg.get("Entrypoint") or ()), *(cfg.get("Cmd") or ())]


def user(image: Image) -> tuple[str, str]:
    """The config's user and group (numeric ids, as these images give them)."""
    uid, _, gid = str(image.config["config"].get("User") or "0").partition(":")
    return uid, gid or uid


@contextmanager
def run(
    image: Image,
    layers: Sequence[Path],
    mountpoint: Path,
    log: Path,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    volume: Path | None = None,
    as_user: tuple[str, str] | None = None,
    entrypoint: Sequence[str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run the image's entrypoint (plus ``args``) in its own root filesystem; stop it by PID on exit.

    ``volume`` is a directory laid over the image (e.g. holding ``tls/server``);
    ``env`` adds to the config's environment; ``as_user`` overrides the config's
    user as a pod's ``securityContext.runAsUser`` would; ``entrypoint`` replaces
    the config's entrypoint and cmd (``docker run --entrypoint``). Output goes to ``log``.
    The PID is the entrypoint's: unshare, sh and chroot each exec the next.
    """
    lower = [*([volume] if volume else []), *reversed(layers)]
    for path in lower:
        path.chmod(0o755)
    environment = dict(kv.split("=", 1) for kv in image.config["config"].get("Env") or ())
    environment.update(env or {})
    uid, gid = as_user or user(image)
    mountpoint.mkdir(parents=True, exist_ok=True)
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _SETUP, "sh"]
    command += [":".join(str(p) for p in lower), str(mountpoint), uid, gid, *(entrypoint or argv(image)), *args]
    with log.open("wb") as out:
        # chroot passes the environment on; the config's PATH also finds the host's mount and chroot.
        proc = subprocess.Popen(command, env=environment, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=_STOP_TIMEOUT)
