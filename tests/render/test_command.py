"""``modelplane render``: file loading, flags, default Composition and errors."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from modelplane import documents
from modelplane.render import command, goyaml, pipeline
from tests.render.toys import ToyRunner, toy_composition

XR = {"apiVersion": "example.org/v1", "kind": "XThing", "metadata": {"name": "thing"}, "spec": {}}


def _comp(script: dict[str, Any]) -> dict[str, Any]:
    return toy_composition(script, step="s")


def _run(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> tuple[int, str, str]:
    monkeypatch.setattr(pipeline, "_loader", lambda: lambda _ref: ToyRunner())
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = command.main(argv)
    return rc, out.getvalue(), err.getvalue()


def _write(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text("".join("---\n" + goyaml.dump_document(d) for d in docs))
    return path


def test_required_resources_from_a_directory_and_context_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    req = tmp_path / "required"
    req.mkdir()
    _write(req / "b.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "labels": {"x": "1"}}})
    _write(req / "a.yml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1"}}})
    (req / "ignored.txt").write_text("not yaml: [")
    (tmp_path / "ctx.json").write_text('{"from": "file"}')
    script = {
        "require": {"all": {"apiVersion": "v1", "kind": "ConfigMap", "matchLabels": {"x": "1"}}},
        "contextToResource": {"key": "f", "resource": "ctx"},
    }
    argv = [
        str(_write(tmp_path / "xr.yaml", XR)),
        "--composition",
        str(_write(tmp_path / "comp.yaml", _comp(script))),
        "--required-resources",
        str(req),
        "--context-files",
        f"f={tmp_path / 'ctx.json'}",
        "--context-values",
        "v=[1, 2]",
        "-c",
    ]
    rc, out, err = _run(monkeypatch, argv)
    assert (rc, err) == (0, "")
    docs = documents.load_all(out)
    assert [d["metadata"]["name"] for d in docs[1:3]] == ["ctx", "required-all"]
    assert docs[1]["data"] == {"value": '{"from": "file"}'}
    assert docs[2]["data"] == {"names": "a,b"}
    assert docs[3] == {
        "apiVersion": "render.crossplane.io/v1beta1",
        "kind": "Context",
        "fields": {"f": {"from": "file"}, "v": [1, 2]},
    }


def test_include_full_xr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xr = {**XR, "metadata": {"name": "thing", "labels": {"a": "b"}}, "spec": {"size": 3}}
    argv = [str(_write(tmp_path / "xr.yaml", xr)), "--composition", str(_write(tmp_path / "c.yaml", _comp({}))), "-x"]
    rc, out, _ = _run(monkeypatch, argv)
    assert rc == 0
    got = documents.load_all(out)[0]
    # The rendered XR merged over the input: its labels and spec stay, the engine's references join them.
    assert (got["metadata"], got["spec"]) == (xr["metadata"], {"size": 3, "crossplane": {"resourceRefs": []}})


@pytest.mark.parametrize(
    ("xr", "extra", "message"),
    [
        pytest.param(
            XR,
            [],
            "modelplane: error: 'XThing' is not a Modelplane kind (known: FleetPriorityClass, FleetQuota,"
            " InferenceClass, InferenceCluster, InferenceGateway, ModelBatchRun, ModelCache, ModelDeployment,"
            " ModelEndpoint, ModelPool, ModelReplica, ModelService, ServingStack);"
            " pass --composition\n",
            id="no-composition-for-a-foreign-kind",
        ),
        pytest.param(
            XR,
            ["--composition", "{tmp}/missing.yaml"],
            "modelplane: error: cannot read {tmp}/missing.yaml: No such file or directory\n",
            id="missing-composition",
        ),
        pytest.param(
            XR,
            ["--composition", "{tmp}/fatal.yaml"],
            "modelplane: error: cannot render composite resource: cannot compose resources: "
            'pipeline step "s" returned a fatal result: no\n',
            id="fatal-result",
        ),
        pytest.param(
            XR,
            ["--composition", "{tmp}/fatal.yaml", "--context-values", "novalue"],
            "modelplane: error: --context-values: expected KEY=VALUE, got 'novalue'\n",
            id="bad-context-value",
        ),
        pytest.param(
            XR,
            ["--composition", "{tmp}/fatal.yaml", "--observed-resources", "{tmp}/empty"],
            'modelplane: error: no YAML files found in "{tmp}/empty" (.yaml or .yml)\n',
            id="empty-observed-dir",
        ),
    ],
)
def test_errors(
    xr: dict[str, Any], extra: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path / "fatal.yaml", _comp({"results": [{"severity": "Fatal", "message": "no"}]}))
    (tmp_path / "empty").mkdir()
    argv = [str(_write(tmp_path / "xr.yaml", xr)), *(a.format(tmp=tmp_path) for a in extra)]
    assert _run(monkeypatch, argv) == (1, "", message.format(tmp=tmp_path))


def test_default_composition_is_found_in_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    comp = _comp({})
    comp["spec"]["compositeTypeRef"] = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceClass"}
    (tmp_path / "apis" / "inferenceclasses").mkdir(parents=True)
    _write(tmp_path / "apis" / "inferenceclasses" / "composition.yaml", comp)
    xr = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "h100"}, "spec": {}}
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(monkeypatch, [str(_write(tmp_path / "xr.yaml", xr))])
    assert (rc, err) == (0, "")
    assert documents.load_all(out)[0]["metadata"] == {"name": "h100"}


def test_warning_events_also_go_to_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = {"results": [{"severity": "Warning", "message": "careful"}, {"severity": "Normal", "message": "fine"}]}
    argv = [str(_write(tmp_path / "xr.yaml", XR)), "--composition", str(_write(tmp_path / "c.yaml", _comp(script)))]
    rc, out, err = _run(monkeypatch, argv)
    assert (rc, err) == (0, 'Warning ComposeResources: Pipeline step "s": careful\n')
    assert "kind: Result" not in out
