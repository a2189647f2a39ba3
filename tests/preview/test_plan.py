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


def _edited(tmp_path: Path, example: str, edit: tuple[str, str]) -> Path:
    """A copy of examples/``example`` with one text replaced in one of its files (``edit``: old, new)."""
    head = tmp_path / "head"
    shutil.copytree(EXAMPLES / example, head)
    for path in sorted(head.rglob("*.yaml")):
        text = path.read_text()
        if edit[0] in text:
            path.write_text(text.replace(edit[0], edit[1], 1))
            return head
    msg = f"{edit[0]!r} not in examples/{example}"
    raise AssertionError(msg)


def _image_change(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    """The plan of examples/scheduling/upgrade moving to vLLM v0.12.0."""
    head = _edited(tmp_path, "scheduling/upgrade/step-1", ("vllm-openai:v0.11.0", "vllm-openai:v0.12.0"))
    args = [
        *flags,
        "--width",
        "160",
        "--assume-ready",
        "--against",
        str(EXAMPLES / "scheduling" / "upgrade" / "step-1"),
        str(head),
    ]
    assert command.main(args) == Exit.OK
    return capsys.readouterr().out.replace(str(head), "HEAD").replace(str(EXAMPLES), "examples")


def test_plan_of_image_change_shows_waves_and_minimum_ready(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _image_change(tmp_path, capsys)
    # maxSurge 1, maxUnavailable 0: one new replica surges, then each wave retires an old one.
    assert "Rollout from the base's settled state: 4 waves" in out
    assert " 1      ml-team/llama-70b-upgrade   llama-70b-upgrade-3 on upgrade-a [hgx]   -  " in out
    assert "llama-70b-upgrade-0 on upgrade-b [hgx]" in out
    assert "Replicas\n" not in out and "End state" in out
    assert " ml-team/llama-70b-upgrade   3               3" in out  # never below 3 Ready
    assert " upgrade-a   4        12     2         8" in out  # the peak, mid-rollout
    # Each wave's minimum is seen before its surged replica turns Ready: 3, never the 4 at its end.
    waves = out.split("Waves\n\n", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    assert [row.split()[-1] for row in waves] == ["3/3"] * 4, waves


@pytest.mark.parametrize(
    ("flags", "golden"),
    [
        pytest.param((), "plan-image-change.txt", id="plan"),
        # The field-level diff a reviewer reads beside the plan, grouped by the cluster it lands on.
        pytest.param(("--diff",), "plan-image-change-diff.txt", id="diff"),
    ],
)
def test_plan_of_image_change_golden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], golden: str
) -> None:
    check_golden(golden, _image_change(tmp_path, capsys, *flags))


@pytest.mark.parametrize(
    ("example", "edit", "moves", "stays"),
    [
        pytest.param(
            "scheduling/drain/step-1",
            ("  name: drain-a\n  labels:\n    modelplane.ai/scenario: drain\nspec:\n", "  name: drain-a\n  labels:\n"
             "    modelplane.ai/scenario: drain\nspec:\n  drain: true\n"),
            [" ml-team/llama-70b-drain-0   drain-a [hgx]   drain-b [hgx]   llama-70b-drain-3",
             " ml-team/llama-70b-drain-2   drain-a [hgx]   drain-b [hgx]   llama-70b-drain-4"],
            [],
            id="every-replica-moves",
        ),
        pytest.param(
            "",
            ("  name: us-east-kai\n", "  name: us-east-kai\n"),
            [" ml-team/llama-70b-0   us-east-kai [h100]   gke-us-central1 [h200]   llama-70b-2"],
            [" ml-team/llama-70b-1   us-east-kai [h100]   no replacement can be placed (InsufficientCapacity: "],
            id="one-replica-cannot-move",
        ),
    ],
)  # fmt: skip
def test_plan_of_drain_shows_moves_and_why_replicas_stay(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    example: str,
    edit: tuple[str, str],
    moves: list[str],
    stays: list[str],
) -> None:
    if example:
        base = [str(EXAMPLES / example)]
        head = [str(_edited(tmp_path, example, edit))]
    else:  # examples/platform + models with us-east-kai draining
        base = [str(EXAMPLES / "platform"), str(EXAMPLES / "models")]
        root = tmp_path / "head"
        shutil.copytree(EXAMPLES, root)
        path = root / "platform" / "clusters" / "us-east-kai.yaml"
        path.write_text(path.read_text().replace("\nspec:\n", "\nspec:\n  drain: true\n", 1))
        head = [str(root / "platform"), str(root / "models")]
    args = ["--width", "200", "--assume-ready", *(a for b in base for a in ("--against", b)), *head]
    command.main(args)
    out = capsys.readouterr().out
    assert "Moves" in out
    for line in moves + stays:
        assert line in out
    assert ("Replicas that stay" in out) == bool(stays)
    # A replica that stays is no removal.
    assert "removed " not in out.split("Objects applied")[0]


def test_diff_is_field_level_and_grouped_by_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    diff = _image_change(tmp_path, capsys, "--diff").split("Diff (base → head):\n", 1)[1]
    targets = [line for line in diff.splitlines() if line.startswith("# target: ")]
    assert targets == ["# target: control plane", "# target: cluster upgrade-a", "# target: cluster upgrade-b"]
    on_b = diff.split("# target: cluster upgrade-b\n", 1)[1]
    # Replica 0 runs on upgrade-b before and after: only the fields that change are - and + lines.
    header = "--- cluster upgrade-b: LLMInferenceService ml-team/llama-70b-upgrade-0 (base)\n"
    header += "+++ cluster upgrade-b: LLMInferenceService ml-team/llama-70b-upgrade-0 (head)\n"
    assert header in on_b
    hunk = on_b.split(header, 1)[1].split("\n--- ", 1)[0]
    changed = [line for line in hunk.splitlines() if line[:1] in "+-"]
    assert any("vllm-openai:v0.12.0" in line for line in changed if line.startswith("+"))
    assert any("vllm-openai:v0.11.0" in line for line in changed if line.startswith("-"))
    assert len(changed) < 10
    assert "+kind: LLMInferenceService" not in hunk  # unchanged fields are context, not changes


def test_diff_needs_a_base(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        command.main(["--diff", str(EXAMPLES / "quickstart")])
    assert exited.value.code == Exit.USAGE
    assert "--diff compares with a base" in capsys.readouterr().err
