"""``make package`` (tools/package.sh, ``crossplane xpkg build``) builds packages with the right contents.

Each .xpkg is an OCI image tarball (``docker save`` layout: manifest.json, a
config blob, gzipped layer tarballs). The config's labels
``io.crossplane.xpkg:<layer digest>`` name the layer holding package.yaml
(``base``) and the one holding the examples (``upbound``). The checks read
those back: the meta, every XRD and Composition in the Configuration
(unchanged by the CLI's typed round trip: ModelDeployment's scale
subresource included), and the function package names agreeing with the
Compositions' functionRefs and crossplane.yaml's dependsOn through
lib/modelplane/kinds.py.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from tests.conformance.schemas import APIS, REPO
from tests.images import host

SCRIPT = REPO / "tools" / "package.sh"
LABEL = "io.crossplane.xpkg:"


@dataclass(frozen=True)
class Xpkg:
    """What one package file holds."""

    meta: dict[str, Any]
    objects: list[dict[str, Any]]
    examples: list[dict[str, Any]] | None
    layers: dict[str, str]  # layer digest -> xpkg annotation


def _layer_file(tar: tarfile.TarFile, name: str, member: str) -> str:
    blob = tar.extractfile(name)
    if blob is None:
        msg = f"{name} is not a file"
        raise ValueError(msg)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob.read()))) as layer:
        f = layer.extractfile(member)
        if f is None:
            msg = f"layer {name} has no {member}"
            raise ValueError(msg)
        return f.read().decode()


def read_xpkg(path: Path) -> Xpkg:
    """Unpack an xpkg: its package.yaml (meta first, then objects) and its examples, if any."""
    with tarfile.open(path) as tar:
        manifest_file = tar.extractfile("manifest.json")
        assert manifest_file is not None
        (manifest,) = json.load(manifest_file)
        config_file = tar.extractfile(manifest["Config"])
        assert config_file is not None
        labels: dict[str, str] = json.load(config_file)["config"].get("Labels") or {}
        layers = {k.removeprefix(LABEL): v for k, v in labels.items() if k.startswith(LABEL)}
        files = {f"sha256:{name.removesuffix('.tar.gz')}": name for name in manifest["Layers"]}
        assert set(layers) <= set(files), (layers, files)
        (base,) = [files[d] for d, a in layers.items() if a == "base"]
        docs = [d for d in yaml.safe_load_all(_layer_file(tar, base, "package.yaml")) if d]
        examples = [files[d] for d, a in layers.items() if a == "upbound"]
        ex = (
            [d for d in yaml.safe_load_all(_layer_file(tar, examples[0], ".up/examples.yaml")) if d]
            if examples
            else None
        )
    return Xpkg(meta=docs[0], objects=docs[1:], examples=ex, layers=layers)


@pytest.fixture(scope="module")
def packages(binary: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Xpkg]:
    # package.sh embeds each function's runtime image, which it builds with tools/images.sh (root, debootstrap).
    host.require()
    out = tmp_path_factory.mktemp("packages")
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(out)],
        env={**os.environ, "CROSSPLANE": str(binary)},
        capture_output=True,
        text=True,
        timeout=host.BUILD_TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return {p.name: read_xpkg(p) for p in sorted(out.glob("*.xpkg"))}


def _yaml(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def test_one_configuration_and_one_function_package_per_kind(packages: dict[str, Xpkg]) -> None:
    assert set(packages) == {"modelplane.xpkg"} | {f"function-{k.function}.xpkg" for k in kinds.KINDS}


def test_configuration_meta(packages: dict[str, Xpkg]) -> None:
    meta = packages["modelplane.xpkg"].meta
    source = _yaml(REPO / "crossplane.yaml")
    assert (meta["apiVersion"], meta["kind"], meta["metadata"]["name"]) == (
        "meta.pkg.crossplane.io/v1",
        "Configuration",
        "modelplane",
    )
    assert meta["spec"] == source["spec"]
    assert meta["metadata"]["annotations"] == source["metadata"]["annotations"]


def test_configuration_has_every_xrd_and_composition(packages: dict[str, Xpkg]) -> None:
    got = {(o["kind"], o["metadata"]["name"]): o for o in packages["modelplane.xpkg"].objects}
    want = {}
    for path in sorted(APIS.glob("*/*.yaml")):
        doc = _yaml(path)
        want[(doc["kind"], doc["metadata"]["name"])] = doc
    assert set(got) == set(want)
    assert {name for kind, name in got if kind == "CompositeResourceDefinition"} == {k.composition for k in kinds.KINDS}
    assert {name for kind, name in got if kind == "Composition"} == {k.composition for k in kinds.KINDS}
    for key, doc in want.items():
        # The CLI re-encodes each object through Crossplane's types: a field it does not know is gone.
        assert got[key]["spec"] == doc["spec"], key


def test_xrd_subresources_survive(packages: dict[str, Xpkg]) -> None:
    source = {
        (d["metadata"]["name"], v["name"]): v["subresources"]
        for d in map(_yaml, sorted(APIS.glob("*/definition.yaml")))
        for v in d["spec"]["versions"]
        if "subresources" in v
    }
    packaged = {
        (o["metadata"]["name"], v["name"]): v["subresources"]
        for o in packages["modelplane.xpkg"].objects
        if o["kind"] == "CompositeResourceDefinition"
        for v in o["spec"]["versions"]
        if "subresources" in v
    }
    # ModelDeployment declares the scale subresource (kubectl scale, KEDA); an older CLI dropped it.
    assert source[("modeldeployments.modelplane.ai", "v1alpha1")]["scale"]["specReplicasPath"] == ".spec.replicas"
    assert packaged == source


def test_configuration_examples_layer_holds_every_example(packages: dict[str, Xpkg]) -> None:
    examples = packages["modelplane.xpkg"].examples
    want = [d for p in sorted((REPO / "examples").rglob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
    assert examples is not None
    key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731 - a sort key
    assert sorted(map(key, examples)) == sorted(map(key, want))


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.function) for k in kinds.KINDS])
def test_function_package(kind: kinds.Kind, packages: dict[str, Xpkg]) -> None:
    pkg = packages[f"function-{kind.function}.xpkg"]
    meta = pkg.meta
    assert (meta["apiVersion"], meta["kind"]) == ("meta.pkg.crossplane.io/v1", "Function")
    # Crossplane names an installed dependency <org>-<package name>: that is the functionRef.
    assert meta["metadata"]["name"] == kind.package.rsplit("/", 1)[1]
    assert f"{kinds.PACKAGE_ORG}-{meta['metadata']['name']}" == kind.function_ref
    assert meta == _yaml(REPO / "functions" / kind.function / "package" / "crossplane.yaml")
    assert all(o["kind"] == "CustomResourceDefinition" for o in pkg.objects)
    assert pkg.examples is None
    assert list(pkg.layers.values()) == ["base"]


@pytest.mark.parametrize("kind", [pytest.param(k, id=k.kind) for k in kinds.KINDS])
def test_composition_function_is_a_dependency(kind: kinds.Kind, packages: dict[str, Xpkg]) -> None:
    config = packages["modelplane.xpkg"]
    (composition,) = [
        o for o in config.objects if o["kind"] == "Composition" and o["metadata"]["name"] == kind.composition
    ]
    refs = [step["functionRef"]["name"] for step in composition["spec"]["pipeline"]]
    assert refs == [kind.function_ref]
    functions = [d for d in config.meta["spec"]["dependsOn"] if d["kind"] == "Function"]
    assert [d for d in functions if d["package"] == kind.package] != []
    assert f"function-{kind.function}.xpkg" in packages
    # Every Function dependency is one of ours, so one of the packages built here.
    assert {d["package"] for d in functions} == {k.package for k in kinds.KINDS}
