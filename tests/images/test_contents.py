"""What each function package's runtime image holds and how it is configured.

Read from the xpkgs ``tools/package.sh`` builds (the runtime image with
Crossplane's package layer on top): the config (entrypoint, a non-root user,
port, labels), one base layer shared by all eight and a thin layer per
function holding that function only, no secrets, caches, compilers or pip,
byte code that needs no rewriting, and, run inside the image, the Python the
project supports with exactly the locked dependencies.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from packaging.specifiers import SpecifierSet

from modelplane.kinds import KINDS, PACKAGE_VERSION, Kind
from tests.images import oci
from tests.images.host import REPO, Built
from tests.images.locks import read_lock

SITE = "venv/lib/python3.11/site-packages"
PORT = "9443/tcp"
XPKG_LABEL = "io.crossplane.xpkg:"
# File names that hold credentials, wherever they are.
SECRET_NAMES = re.compile(
    r"(^|/)(\.netrc|\.pypirc|\.git-credentials|\.npmrc|\.docker/config\.json|\.aws/credentials|"
    r"id_(rsa|dsa|ecdsa|ed25519)|[^/]*\.(key|p12|pfx|jks))$"
)
# A PEM private key: its armour around a body. Compiled code is not searched: GnuTLS carries
# the public test vectors of its self-tests, and a secret leaked by a build is a file, not a constant.
PRIVATE_KEY = re.compile(
    rb"-----BEGIN [A-Z ]*PRIVATE KEY-----\r?\n[A-Za-z0-9+/=:, \r\n-]{40,}?-----END [A-Z ]*PRIVATE KEY-----"
)
ELF = b"\x7fELF"
# What a runtime image must not carry: build tools and what installing left behind.
LEFTOVERS = re.compile(
    r"^(usr/bin/(gcc|g\+\+|cc|c\+\+|cpp|make|x86_64-linux-gnu-gcc)[^/]*"
    rf"|{SITE}/(pip|setuptools|wheel)/.*"
    r"|var/cache/apt/archives/.+\.deb|var/lib/apt/lists/.+|root/\.cache/.*|tmp/.+|dev/.+)$"
)
# A hash-based pyc that is not checked against its source (PEP 552): valid whatever the files' times.
UNCHECKED_HASH_PYC = 0b01


def _leaks_private_key(data: bytes) -> bool:
    return not data.startswith(ELF) and PRIVATE_KEY.search(data) is not None


def _pem_key() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.mark.parametrize(
    ("name", "content", "secret", "leftover"),
    [
        pytest.param("root/.netrc", b"machine x login y password z", True, False, id="netrc"),
        pytest.param("home/u/.ssh/id_ed25519", b"", True, False, id="ssh-key"),
        pytest.param("etc/tls/tls.key", b"", True, False, id="key-file"),
        pytest.param("srv/app.cfg", _pem_key(), True, False, id="pem-private-key"),
        pytest.param("usr/share/x/README", b"-----BEGIN RSA PRIVATE KEY-----\n...", False, False, id="armour-only"),
        pytest.param("usr/lib/libgnutls.so", ELF + _pem_key(), False, False, id="self-test-vector-in-elf"),
        pytest.param("usr/bin/gcc-12", b"", False, True, id="compiler"),
        pytest.param(f"{SITE}/pip/__init__.py", b"", False, True, id="pip"),
        pytest.param("root/.cache/pip/http/x", b"", False, True, id="pip-cache"),
        pytest.param("var/cache/apt/archives/python3_3.11.deb", b"", False, True, id="deb"),
        pytest.param("usr/bin/python3.11", b"", False, False, id="interpreter"),
        pytest.param("usr/share/doc/gnutls/copyright", b"", False, False, id="copyright"),
        pytest.param("tmp/", b"", False, False, id="empty-tmp"),
    ],
)
def test_detectors(name: str, content: bytes, secret: bool, leftover: bool) -> None:
    # The layer scan below passes only if these detectors can find what they look for.
    assert bool(SECRET_NAMES.search(name) or _leaks_private_key(content)) == secret
    assert bool(LEFTOVERS.match(name.rstrip("/"))) == leftover


@pytest.fixture(scope="module")
def images(built: Built) -> dict[str, oci.Image]:
    return {k.function: oci.read(built.packages / f"function-{k.function}.xpkg") for k in KINDS}


@pytest.fixture(scope="module")
def summary(built: Built) -> dict[str, dict[str, Any]]:
    """What tools/images.sh reported for each runtime image it wrote, by function."""
    return {
        i["tag"].rsplit("/function-", 1)[1].split(":")[0]: i
        for i in json.loads((built.images / "images.json").read_text())
    }


def _layer(image: oci.Image, index: int) -> tarfile.TarFile:
    return tarfile.open(fileobj=io.BytesIO(gzip.decompress(image.blob(image.layers[index]))))


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.function) for k in KINDS])
def test_config(kind: Kind, images: dict[str, oci.Image]) -> None:
    image = images[kind.function]
    assert (image.config["os"], image.config["architecture"]) == ("linux", "amd64")
    config = image.config["config"]
    assert oci.argv(image) == ["/venv/bin/python", "-m", kind.module]
    uid, gid = oci.user(image)
    assert uid.isdigit(), "a numeric user, so a runtime can tell it is not root without the image's passwd"
    assert gid.isdigit()
    assert int(uid) != 0
    assert int(gid) != 0
    assert PORT in config["ExposedPorts"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == PACKAGE_VERSION
    assert labels["org.opencontainers.image.title"] == f"function-{kind.function}"
    assert labels["org.opencontainers.image.source"].startswith("https://")
    assert len(labels["org.opencontainers.image.revision"]) in (40, len("unknown"))


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.function) for k in KINDS])
def test_package_embeds_the_runtime_image_unchanged(
    kind: Kind, images: dict[str, oci.Image], summary: dict[str, dict[str, Any]]
) -> None:
    image = images[kind.function]
    runtime = [layer["digest"] for layer in summary[kind.function]["layers"]]
    # Crossplane's package layer (package.yaml) goes on top of the image's own layers.
    assert list(image.digests[: len(runtime)]) == runtime
    xpkg = {
        k.removeprefix(XPKG_LABEL): v for k, v in image.config["config"]["Labels"].items() if k.startswith(XPKG_LABEL)
    }
    assert xpkg == {image.digests[-1]: "base"}
    assert len(image.digests) == len(runtime) + 1


def test_oci_layout_holds_every_image(built: Built, summary: dict[str, dict[str, Any]]) -> None:
    oci_dir = built.images / "oci"
    assert json.loads((oci_dir / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads((oci_dir / "index.json").read_text())
    named = {m["annotations"]["org.opencontainers.image.ref.name"]: m["digest"] for m in index["manifests"]}
    assert named == {i["tag"]: i["digest"] for i in summary.values()}
    blobs = sorted((oci_dir / "blobs" / "sha256").iterdir())
    assert [b.name for b in blobs if hashlib.sha256(b.read_bytes()).hexdigest() != b.name] == []
    # One base blob, one layer and one config per function, one manifest per function.
    assert len(blobs) == 1 + 3 * len(KINDS)


def test_one_base_layer_for_all_and_one_layer_per_function(images: dict[str, oci.Image]) -> None:
    assert len({i.digests[0] for i in images.values()}) == 1
    assert len({i.digests[1] for i in images.values()}) == len(KINDS)


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.function) for k in KINDS])
def test_function_layer_holds_its_function_only(kind: Kind, images: dict[str, oci.Image]) -> None:
    with _layer(images[kind.function], 1) as layer:
        members = layer.getmembers()
    names = [m.name for m in members]
    assert all(n == "venv" or n.startswith("venv/") for n in names), [n for n in names if not n.startswith("venv")]
    packages = {n.removeprefix(SITE + "/").split("/")[0] for n in names if n.startswith(SITE + "/")}
    assert {p for p in packages if p.startswith("compose_")} == {kind.module}
    assert {"modelplane", "modelplane_models"} <= packages
    # Root's, and not writable by whoever runs the function.
    assert {(m.uid, m.gid) for m in members} == {(0, 0)}
    assert [m.name for m in members if m.mode & 0o022] == []


def _layer_ids() -> list[Any]:
    return [pytest.param(KINDS[0], 0, id="base")] + [pytest.param(k, 1, id=k.function) for k in KINDS]


@pytest.mark.parametrize(("kind", "index"), _layer_ids())
def test_no_secrets_leftovers_or_stale_byte_code(kind: Kind, index: int, images: dict[str, oci.Image]) -> None:
    secrets, leftovers, pycs = [], [], []
    with _layer(images[kind.function], index) as layer:
        for m in layer:
            if SECRET_NAMES.search(m.name):
                secrets.append(m.name)
            if LEFTOVERS.match(m.name):
                leftovers.append(m.name)
            if not m.isfile():
                continue
            f = layer.extractfile(m)
            assert f is not None
            data = f.read()
            if _leaks_private_key(data):
                secrets.append(m.name)
            if m.name.endswith(".pyc") and int.from_bytes(data[4:8], "little") != UNCHECKED_HASH_PYC:
                pycs.append(m.name)
    assert secrets == []
    assert leftovers == []
    # Timestamp pycs would go stale against the layer's clamped times; the non-root user could not rewrite them.
    assert pycs == []


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


_PROBE = """
import importlib.metadata as md, importlib.util as u, json, os, sys
mods = sys.argv[1].split(",")
print(json.dumps({
    "version": "%d.%d.%d" % sys.version_info[:3],
    "uid": os.geteuid(),
    "importable": {m: u.find_spec(m) is not None for m in mods},
    "distributions": {d.metadata["Name"]: d.version for d in md.distributions()},
}))
"""


def test_python_and_dependencies_in_the_image(built: Built, images: dict[str, oci.Image], tmp_path: Path) -> None:
    kind = KINDS[0]
    image = images[kind.function]
    modules = ["modelplane", "modelplane_models", *(k.module for k in KINDS)]
    log = tmp_path / "probe.log"
    entrypoint = ["/venv/bin/python", "-c", _PROBE, ",".join(modules)]
    with oci.run(image, oci.unpack(image, built.layers), tmp_path / "root", log, entrypoint=entrypoint) as proc:
        assert proc.wait(timeout=60) == 0, log.read_text()
    probe = json.loads(log.read_text().splitlines()[-1])
    assert SpecifierSet(_pyproject()["project"]["requires-python"]).contains(probe["version"])
    # The version mypy checks against (pyproject's tool.mypy.python_version).
    assert probe["version"].startswith(_pyproject()["tool"]["mypy"]["python_version"] + ".")
    assert probe["uid"] != 0
    assert probe["importable"] == {m: m in ("modelplane", "modelplane_models", kind.module) for m in modules}
    from packaging.utils import canonicalize_name  # noqa: PLC0415 - only this test compares names

    installed: dict[str, str] = {str(canonicalize_name(n)): v for n, v in probe["distributions"].items()}
    assert installed.pop("modelplane") == PACKAGE_VERSION.removeprefix("v")
    assert installed == read_lock("requirements.lock")


def test_configuration_depends_on_this_version_of_every_function() -> None:
    meta = yaml.safe_load((REPO / "crossplane.yaml").read_text())
    functions = {d["package"]: d["version"] for d in meta["spec"]["dependsOn"] if d["kind"] == "Function"}
    assert functions == {k.package: PACKAGE_VERSION for k in KINDS}
