"""Plan mode: ``--against BASE_DIR`` and ``--live`` show what a change does; golden output."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
import yaml

from modelplane.preview import command
from modelplane.preview.findings import Exit
from modelplane.preview.live import kubectl_command, parse_list
from modelplane.preview.manifests import ManifestError
from tests.golden.cases import observed_examples
from tests.preview.test_explain import check_golden

EXAMPLES = observed_examples()


def _change(tmp_path: Path) -> Path:
    """examples/ with llama-70b scaled to 3 and the llama-8b canary at 50/50."""
    head = tmp_path / "head"
    shutil.copytree(EXAMPLES, head)
    path = head / "models" / "llama-70b.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    docs[0]["spec"]["replicas"] = 3
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    path = head / "models" / "llama-8b-canary.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        if doc["kind"] == "ModelService":
            for endpoint in doc["spec"]["endpoints"]:
                endpoint["weight"] = 50
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return head


def test_plan_golden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = _change(tmp_path)
    args = ["--width", "120", "--assume-ready", "--against", str(EXAMPLES / "platform")]
    args += ["--against", str(EXAMPLES / "models"), str(head / "platform"), str(head / "models")]
    assert command.main(args) == Exit.OK
    out = capsys.readouterr().out.replace(str(head), "HEAD").replace(str(EXAMPLES), "examples")
    check_golden("plan-scale-and-canary.txt", out)


def test_plan_of_no_change_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    quickstart = str(EXAMPLES / "quickstart")
    assert command.main(["--against", quickstart, quickstart]) == Exit.OK
    assert "no changes" in capsys.readouterr().out


def test_plan_exit_code_is_the_heads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = tmp_path / "head"
    shutil.copytree(EXAMPLES / "quickstart", head)
    path = head / "deployment.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["replicas"] = 3  # two L4s: one replica is left unplaced
    path.write_text(yaml.safe_dump(doc))
    assert command.main(["--width", "200", "--against", str(EXAMPLES / "quickstart"), str(head)]) == Exit.UNPLACED
    out = capsys.readouterr().out
    assert "added    default/qwen-1   -        quickstart [l4]" in out
    assert "quickstart   1 → 2         1 → 0" in out
    assert "[exit 5] ModelDeployment default/qwen: placed 2 of 3: InsufficientCapacity" in out


def _fake_kubectl(tmp_path: Path, listing: str, *, code: int = 0) -> Path:
    """A kubectl on PATH that prints ``listing`` for exactly the command --live runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "listing.yaml").write_text(listing)
    want = " ".join(kubectl_command()[1:])
    script = bin_dir / "kubectl"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$*" != "{want}" ]; then echo "unexpected: $*" >&2; exit 2; fi\n'
        f'cat "{tmp_path / "listing.yaml"}"\n'
        f"exit {code}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def _live_listing() -> str:
    items = []
    for path in sorted((EXAMPLES / "quickstart").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            doc.setdefault("metadata", {})["resourceVersion"] = "42"
            doc["metadata"]["uid"] = f"uid-{doc['kind']}-{doc['metadata']['name']}"
            items.append(doc)
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})


def test_live_reads_the_base_with_kubectl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{_fake_kubectl(tmp_path, _live_listing())}:/usr/bin:/bin")
    head = tmp_path / "head"
    shutil.copytree(EXAMPLES / "quickstart", head)
    path = head / "service.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["metadata"]["name"] = "qwen-chat"
    path.write_text(yaml.safe_dump(doc))
    assert command.main(["--width", "200", "--live", str(head)]) == Exit.OK
    out = capsys.readouterr().out
    assert f"Plan: {head} against the live control plane" in out
    assert "+ ModelService default/qwen-chat" in out
    assert "- ModelService default/qwen" in out
    # The live objects' server-set metadata is not a change.
    assert "~ ModelDeployment default/qwen" not in out


def test_live_reports_a_failing_kubectl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{_fake_kubectl(tmp_path, '', code=1)}:/usr/bin:/bin")
    assert command.main(["--live", str(EXAMPLES / "quickstart")]) == Exit.FAILED
    assert "kubectl get modelplane --all-namespaces -o yaml failed (1)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("items: 3", "want a List with items", id="not-a-list"),
        pytest.param("items: [{kind: X}]", "without kind or metadata.name", id="no-name"),
        pytest.param("{", "not YAML", id="not-yaml"),
    ],
)
def test_parse_list_refuses_what_is_not_a_list(text: str, want: str) -> None:
    with pytest.raises(ManifestError, match=want):
        parse_list(text, "live")
