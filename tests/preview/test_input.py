"""Input: a YAML stream on stdin (``-``), kustomizations built with kustomize, kubectl's default namespace."""

from __future__ import annotations

import io
import shutil
import stat
import sys
from pathlib import Path

import pytest
import yaml

from modelplane.preview import command
from modelplane.preview.findings import Exit
from modelplane.preview.manifests import load_dir
from tests.golden.cases import observed_examples
from tests.preview.test_preview import _flat

QUICKSTART = observed_examples() / "quickstart"


def _stream(*paths: Path) -> str:
    return "".join(f"---\n{p.read_text()}" for p in paths)


def test_stdin_preview(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(_stream(*sorted(QUICKSTART.glob("*.yaml")))))
    assert command.main(["--width", "200", "--assume-ready", "-"]) == Exit.OK
    out = _flat(capsys.readouterr().out)
    assert out.startswith("Modelplane preview of <stdin>: ")
    assert "default/qwen 1/1 1/1 1 TP1 qwen-0 → quickstart [l4]" in out


def test_stdin_names_itself_in_a_refusal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load((QUICKSTART / "deployment.yaml").read_text())
    doc["spec"]["replcias"] = doc["spec"].pop("replicas")
    stream = _stream(QUICKSTART / "class.yaml", QUICKSTART / "cluster.yaml") + "---\n" + yaml.safe_dump(doc)
    monkeypatch.setattr(sys, "stdin", io.StringIO(stream))
    assert command.main(["--width", "200", "-"]) == Exit.REFUSED
    assert 'error when creating "<stdin>"' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("stream", "want"),
    [
        pytest.param("", "<stdin>: no manifests", id="empty"),
        pytest.param("kind: [", "<stdin>: not valid YAML", id="not-yaml"),
        pytest.param("apiVersion: v1\nkind: ConfigMap\n", "<stdin>: ConfigMap has no metadata.name", id="no-name"),
    ],
)
def test_bad_stdin_names_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stream: str, want: str
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stream))
    assert command.main(["-"]) == Exit.FAILED
    assert want in capsys.readouterr().err


def test_stdin_twice_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        command.main(["--against", "-", "-"])
    assert exited.value.code == 2
    assert "- (stdin) can be read once" in capsys.readouterr().err


def _kustomized(tmp_path: Path) -> Path:
    """The quickstart as a kustomization (its files listed as resources), in a directory of its own."""
    fleet = tmp_path / "fleet"
    shutil.copytree(QUICKSTART, fleet)
    resources = sorted(p.name for p in fleet.glob("*.yaml"))
    (fleet / "kustomization.yaml").write_text(yaml.safe_dump({"resources": resources}))
    return fleet


def _fake_kustomize(bin_dir: Path, script: str) -> Path:
    """A ``kustomize`` on PATH that runs ``script`` (sh) instead of the real tool."""
    bin_dir.mkdir()
    tool = bin_dir / "kustomize"
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def test_kustomize_missing_says_it_is_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _kustomized(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert command.main([str(fleet)]) == Exit.FAILED
    err = capsys.readouterr().err
    assert f"{fleet}/kustomization.yaml: building it needs kustomize on PATH" in err
    assert f"kubectl kustomize {fleet} | modelplane preview -" in err


def test_kustomize_present_builds_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _kustomized(tmp_path)
    # A kustomize that records its arguments and prints every resource, as `kustomize build` would.
    script = f'echo "$@" > {tmp_path}/args\nfor f in "$2"/*.yaml; do [ "$f" = "$2/kustomization.yaml" ] || '
    script += '{ echo ---; cat "$f"; }; done\n'
    bin_dir = _fake_kustomize(tmp_path / "bin", script)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert command.main(["--width", "200", "--assume-ready", str(fleet)]) == Exit.OK
    assert (tmp_path / "args").read_text().split() == ["build", str(fleet)]
    assert "default/qwen 1/1 1/1 1 TP1 qwen-0 → quickstart [l4]" in _flat(capsys.readouterr().out)
    # Objects are named by the build they came from.
    assert set(load_dir(fleet).sources.values()) == {f"{fleet} (kustomize build)"}


def test_kustomize_beside_plain_manifests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    (root / "overlay").mkdir(parents=True)
    (root / "overlay" / "kustomization.yaml").write_text("resources: []\n")
    (root / "overlay" / "ignored.yaml").write_text("not: a manifest\n")  # kustomize's input, not ours
    shutil.copy(QUICKSTART / "class.yaml", root / "class.yaml")
    bin_dir = _fake_kustomize(tmp_path / "bin", f"cat {QUICKSTART / 'cluster.yaml'}\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    loaded = load_dir(root)
    assert sorted(k[0] for k in loaded.sources) == ["InferenceClass", "InferenceCluster"]


def test_kustomize_failure_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _kustomized(tmp_path)
    bin_dir = _fake_kustomize(tmp_path / "bin", 'echo "Error: accumulating resources: nope.yaml" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert command.main([str(fleet)]) == Exit.FAILED
    err = capsys.readouterr().err
    assert f"kustomize build {fleet} failed (1): Error: accumulating resources: nope.yaml" in err


def test_default_namespace_is_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = tmp_path / "fleet"
    shutil.copytree(QUICKSTART, fleet)
    for path in fleet.glob("*.yaml"):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        for doc in docs:
            # The gateway's key Secret lives in crossplane-system, not in the default namespace.
            if doc.get("kind") != "Secret":
                doc["metadata"].pop("namespace", None)
        path.write_text(yaml.safe_dump_all(docs))
    assert command.main(["--width", "200", "--assume-ready", str(fleet)]) == Exit.OK
    out = _flat(capsys.readouterr().out)
    assert "default/qwen http://203.0.113.10/default/qwen key: any all: 600 req/min Routed" in out
    assert "//qwen" not in out
    keys = set(load_dir(fleet).sources)
    # Namespaced kinds get kubectl's default; cluster-scoped ones stay without a namespace.
    assert {("ModelDeployment", "default", "qwen"), ("ModelService", "default", "qwen")} <= keys
    assert ("InferenceClass", "", "nvidia-l4") in keys


@pytest.mark.parametrize(
    ("doc", "namespace"),
    [
        pytest.param({"apiVersion": "v1", "kind": "ConfigMap"}, "default", id="built-in-namespaced"),
        pytest.param({"apiVersion": "v1", "kind": "Namespace"}, "", id="built-in-cluster-scoped"),
        pytest.param({"apiVersion": "example.com/v1", "kind": "Widget"}, "default", id="unknown-kind"),
        pytest.param({"apiVersion": "example.com/v1", "kind": "ClusterWidget"}, "", id="unknown-cluster-kind"),
        pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "ns": "team"}, "team", id="namespace-kept"),
    ],
)
def test_namespace_as_kubectl_sets_it(tmp_path: Path, doc: dict[str, str], namespace: str) -> None:
    meta = {"name": "x", **({"namespace": doc.pop("ns")} if "ns" in doc else {})}
    (tmp_path / "x.yaml").write_text(yaml.safe_dump({**doc, "metadata": meta}))
    ((kind, got, _),) = load_dir(tmp_path).sources
    assert (kind, got) == (doc["kind"], namespace)
