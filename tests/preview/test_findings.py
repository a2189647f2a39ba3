"""Each mistake a new user makes, as ``modelplane preview`` reports it: the message and the exit code."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.preview import command
from modelplane.preview.findings import Exit, Finding, exit_code
from modelplane.preview.fleet import simulate as simulate_fleet
from modelplane.render import RenderInputs, RenderOutput, render
from modelplane.repo import ROOT

QUICKSTART = ROOT / "examples" / "quickstart"


def _quickstart(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None = None, file: str = "deployment.yaml"
) -> Path:
    """A copy of the quickstart with one manifest edited."""
    target = tmp_path / "fleet"
    shutil.copytree(QUICKSTART, target)
    if edit is not None:
        doc = yaml.safe_load((target / file).read_text())
        edit(doc)
        (target / file).write_text(yaml.safe_dump(doc, sort_keys=False))
    return target


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = command.main(["--width", "200", *args])
    return code, capsys.readouterr().out


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[last] = value

    return edit


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        del node[last]

    return edit


@pytest.mark.parametrize(
    ("edit", "file", "want"),
    [
        pytest.param(
            _set("spec.replcias", 3),
            "deployment.yaml",
            [
                'Error from server (BadRequest): error when creating "{dir}/deployment.yaml": ModelDeployment in '
                'version "v1alpha1" cannot be handled as a ModelDeployment: strict decoding error: '
                'unknown field "spec.replcias"',
                "  hint: spec.replcias: did you mean spec.replicas?",
            ],
            id="typo-replicas",
        ),
        pytest.param(
            _set("spec.workers.template.spec.containers.0.imagePullPolcy", "Always"),
            "deployment.yaml",
            [
                'strict decoding error: unknown field "spec.workers.template.spec.containers[0].imagePullPolcy"',
                "  hint: spec.workers.template.spec.containers[0].imagePullPolcy: did you mean "
                "spec.workers.template.spec.containers[0].imagePullPolicy?",
            ],
            id="typo-image-pull-policy",
        ),
        pytest.param(
            _set("spec.endpoints.0.weight", 0),
            "service.yaml",
            [
                'The ModelService "qwen" is invalid: spec.endpoints: Invalid value: "array": at least one '
                "spec.endpoints[].weight must be greater than 0"
            ],
            id="all-weights-zero",
        ),
        pytest.param(
            _drop("spec.nodeSelector"),
            "deployment.yaml",
            ['The ModelDeployment "qwen" is invalid: '],
            id="unified-without-node-selector",
        ),
    ],
)
def test_a_manifest_kubectl_would_refuse_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], None],
    file: str,
    want: list[str],
) -> None:
    fleet = _quickstart(tmp_path, edit, file)
    code, out = _run(capsys, str(fleet))
    assert code == Exit.REFUSED
    for line in want:
        assert line.format(dir=fleet) in out, out
    kind = "ModelService" if file == "service.yaml" else "ModelDeployment"
    assert f"[exit 3] {kind} default/qwen: refused by admission (above)" in out
    # A refused manifest is not rendered: it appears in no table.
    if kind == "ModelDeployment":
        assert "default/qwen-0" not in out


def test_the_unified_deployment_without_node_selector_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(capsys, str(_quickstart(tmp_path, _drop("spec.nodeSelector"))))
    assert code == Exit.REFUSED
    assert "nodeSelector" in out.split("Refused by admission (not rendered)")[1].split("\n\n")[0]


def test_a_function_error_exits_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(inputs: RenderInputs) -> RenderOutput:
        if inputs.xr["kind"] == "ModelService":
            msg = 'pipeline step "compose" returned a fatal result: cannot ever work'
            raise RuntimeError(msg)
        return render(inputs)

    real = simulate_fleet

    def simulate(*args: Any, **kwargs: Any) -> Any:
        return real(*args, **kwargs, renderer=failing)

    monkeypatch.setattr(command, "simulate", simulate)
    code, out = _run(capsys, str(_quickstart(tmp_path)))
    assert code == Exit.FUNCTION_ERROR
    assert (
        '[exit 4] ModelService default/qwen: pipeline step "compose" returned a fatal result: cannot ever work' in out
    )


def test_unplaced_replicas_exit_5_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = _quickstart(tmp_path, _set("spec.replicas", 3))
    code, out = _run(capsys, str(fleet))
    assert code == Exit.UNPLACED
    assert "[exit 5] ModelDeployment default/qwen: placed 2 of 3: InsufficientCapacity" in out
    assert out.rstrip().endswith("exit 5: replicas left unplaced")
    code, out = _run(capsys, "--allow-unscheduled", str(fleet))
    assert code == Exit.OK
    assert out.rstrip().endswith("exit 0: OK (1 accepted by --allow-* flags)")


def test_unrouted_services_exit_6_with_assume_ready_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _quickstart(tmp_path, _set("spec.gatewayRef", {"name": "nope"}), "service.yaml")
    code, out = _run(capsys, "--assume-ready", str(fleet))
    assert code == Exit.UNROUTED
    assert "[exit 6] ModelService default/qwen: not routed: GatewayNotFound" in out
    assert _run(capsys, "--assume-ready", "--allow-unrouted", str(fleet))[0] == Exit.OK
    # Offline nothing serves, so routing is not judged and says so.
    code, out = _run(capsys, str(fleet))
    assert code == Exit.OK
    assert "routing is not judged (use --assume-ready)" in out


def test_a_good_fleet_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--assume-ready", str(QUICKSTART))
    assert code == Exit.OK
    assert out.rstrip().endswith("exit 0: OK")


@pytest.mark.parametrize(
    ("codes", "flags", "want"),
    [
        pytest.param([], {}, Exit.OK, id="nothing"),
        pytest.param([Exit.UNROUTED, Exit.UNPLACED], {}, Exit.UNPLACED, id="lowest-wins"),
        pytest.param(
            [Exit.UNPLACED, Exit.REFUSED], {"allow_unscheduled": True}, Exit.REFUSED, id="refused-not-allowed"
        ),
        pytest.param(
            [Exit.UNPLACED, Exit.UNROUTED], {"allow_unscheduled": True}, Exit.UNROUTED, id="allow-unscheduled"
        ),
        pytest.param(
            [Exit.UNPLACED, Exit.UNROUTED],
            {"allow_unscheduled": True, "allow_unrouted": True},
            Exit.OK,
            id="allow-both",
        ),
    ],
)
def test_exit_code(codes: list[Exit], flags: dict[str, bool], want: Exit) -> None:
    assert exit_code([Finding(c, "x", "y") for c in codes], **flags) == want


def test_no_line_is_printed_twice(capsys: pytest.CaptureFixture[str]) -> None:
    examples = ROOT / "examples"
    _, out = _run(capsys, str(examples / "platform"), str(examples / "models"))
    # Every line but the rules under table headers and the continuation lines of wrapped cells.
    lines = [x for x in out.splitlines() if x.strip() and not set(x.strip()) <= {"─"} and not x.startswith("   ")]
    assert len(lines) == len(set(lines)), [line for line in lines if lines.count(line) > 1]


def test_a_refused_manifest_leaves_the_others_rendered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = _quickstart(tmp_path)
    bad = copy.deepcopy(yaml.safe_load((fleet / "deployment.yaml").read_text()))
    bad["metadata"]["name"] = "typo"
    bad["spec"]["replcias"] = 2
    (fleet / "typo.yaml").write_text(yaml.safe_dump(bad))
    code, out = _run(capsys, str(fleet))
    assert code == Exit.REFUSED
    assert "qwen-0 → quickstart [l4]" in out
    assert "default/typo" not in out.split("Findings")[0].split("Refused by admission")[1].split("GPUs")[1]
