"""Each mistake a new user makes, as ``modelplane preview`` reports it: the message and the exit code."""

from __future__ import annotations

import copy
import json
import re
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
from tests.golden.cases import observed_examples

QUICKSTART = observed_examples() / "quickstart"


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
    examples = observed_examples()
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


# --- Findings a gate can act on -------------------------------------------------------------------

FIRST = observed_examples() / "first"
L4 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'


@pytest.mark.parametrize(
    ("edit", "field", "error", "caret"),
    [
        pytest.param(
            _set("spec.nodeSelector.cel", L4 + " &&"),
            "spec.nodeSelector.cel",
            "<input>:1:66: syntax error: expected an expression, found end of input",
            " | " + "." * 65 + "^",
            id="trailing-and",
        ),
        pytest.param(
            _set("spec.nodeSelector.cel", 'device.capacity["gpu.nvidia.com"].memory >= quantity("20Gi")'),
            "spec.nodeSelector.cel",
            "<input>:1:42: type error: found no matching overload for '_>=_' applied to "
            "'(kubernetes.Quantity, kubernetes.Quantity)'",
            " | " + "." * 41 + "^",
            id="quantity-has-no-ordering",
        ),
        pytest.param(
            _set("spec.nodeSelector.cel", L4 + " &&\n  device.driver == 1"),
            "spec.nodeSelector.cel",
            "<input>:2:17: type error: found no matching overload for '_==_' applied to '(string, int)'",
            " | " + "." * 16 + "^",
            id="second-line",
        ),
        pytest.param(
            _set("spec.nodeSelector.devices", [{"name": "nic", "cel": "device.driver =="}]),
            "spec.nodeSelector.devices[0].cel",
            "<input>:1:17: syntax error: expected an expression, found end of input",
            " | " + "." * 16 + "^",
            id="extra-device",
        ),
    ],
)
def test_cel_syntax_error_is_exit_3_with_column(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], None],
    field: str,
    error: str,
    caret: str,
) -> None:
    fleet = _quickstart(tmp_path, edit)
    code, out = _run(capsys, str(fleet))
    assert code == Exit.REFUSED, out
    refused = out.split("Refused by admission (not rendered)\n")[1].split("\n\n")[0]
    head = (
        f'error when creating "{fleet}/deployment.yaml": The ModelDeployment "qwen" is invalid: {field}: Invalid value:'
    )
    assert refused.startswith(head), refused
    assert f"compilation failed: ERROR: {error}" in refused
    assert caret in refused.splitlines()
    assert "  hint: modelplane preview compiles DRA CEL selectors at admission" in refused
    assert "[exit 3] ModelDeployment default/qwen: refused by admission (above)" in out
    assert "CELError" not in out
    assert "qwen-0" not in out  # not rendered


def test_a_cel_error_only_evaluation_finds_is_still_the_schedulers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It compiles: the API server and the preview accept it, and it fails on every device, as it would live.
    fleet = _quickstart(tmp_path, _set("spec.nodeSelector.cel", 'device.attributes["gpu.nvidia.com"].model == "L4"'))
    code, out = _run(capsys, str(fleet))
    assert code == Exit.UNPLACED
    assert "[exit 5] ModelDeployment default/qwen: placed 0 of 1: CELError" in out


def _first(tmp_path: Path, **sets: Any) -> Path:
    """A copy of examples/first with fields of llama-8b.yaml's documents set (``"0.spec.replicas"``...)."""
    target = tmp_path / "first"
    shutil.copytree(FIRST, target)
    docs = list(yaml.safe_load_all((target / "llama-8b.yaml").read_text()))
    for path, value in sets.items():
        index, _, rest = path.partition(".")
        _set(rest, value)(docs[int(index)])
    (target / "llama-8b.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return target


def test_reason_is_per_cause_not_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Reported: lab is Ready once the world is, but the 8B asked for 16 GPUs per node on an L4 pool, and
    # the preview said "lab: NotReady", the reason of the first pass, when lab was still Creating.
    fleet = _first(tmp_path, **{"0.spec.workers.topology.tensor": 16})
    code, out = _run(capsys, "--assume-ready", str(fleet))
    assert code == Exit.UNPLACED
    why = out.split("  default/llama-8b: placed 0 of 1 (NoMatchingPools)\n")[1].splitlines()[0].strip()
    assert why == (
        "lab: NoMatchingPools: pool l4: a worker needs 16 GPUs per node; nvidia-l4 has 1; "
        "pool h100: spec.nodeSelector.cel matches no DRA device of nvidia-h100-8"
    )
    assert "NotReady" not in out
    code, out = _run(capsys, "--assume-ready", "--explain", "default/llama-8b", str(fleet))
    assert code == Exit.UNPLACED
    row = next(line for line in out.splitlines() if line.startswith(" lab ") and "match" in line)
    assert row.split()[-2:] == ["NoMatchingPools", "[1]"], row
    assert "llama-8b-0 - - - - - unplaced NoMatchingPools" in " ".join(out.split())


def test_missing_class_reported_against_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = _quickstart(tmp_path, _set("spec.nodePools.0.className", "nvidia-l40"), "cluster.yaml")
    code, out = _run(capsys, str(fleet))
    assert code == Exit.UNPLACED
    assert (
        "[exit 5] InferenceCluster quickstart: pool l4: spec.nodePools[0].className: InferenceClass nvidia-l40 "
        "not found (did you mean nvidia-l4?); the pool offers no GPUs to place replicas on"
    ) in out
    # Nothing placed on it or not, the pool is a finding of its own: the gate fails on the cluster alone.
    (fleet / "deployment.yaml").unlink()
    (fleet / "service.yaml").unlink()
    code, out = _run(capsys, str(fleet))
    assert code == Exit.UNPLACED
    findings = out.split("Findings\n")[1].split("\n\n")[0].splitlines()
    assert [f.split(":")[0] for f in findings] == ["  [exit 5] InferenceCluster quickstart"]
    # A class nothing is near to: no guess.
    fleet = _quickstart(tmp_path / "far", _set("spec.nodePools.0.className", "tpu-v5e"), "cluster.yaml")
    _, out = _run(capsys, str(fleet))
    assert "InferenceClass tpu-v5e not found; the pool offers no GPUs" in out


_REPR = re.compile(r"root=|Value\(|RootModel|pydantic|<enum |Operator\.|\w+\(\w+=|errors\.pydantic\.dev")


@pytest.mark.parametrize(
    "fleet",
    [
        pytest.param(["first"], id="first"),
        pytest.param(["scheduling/no-matching-cluster"], id="no-matching-cluster"),
        pytest.param(["scheduling/bad-cel"], id="bad-cel"),
        pytest.param(["scheduling/insufficient-capacity"], id="insufficient-capacity"),
        pytest.param(["platform", "models"], id="platform-and-models"),
    ],
)
def test_no_python_repr_in_messages(capsys: pytest.CaptureFixture[str], fleet: list[str]) -> None:
    dirs = [str(observed_examples() / d) for d in fleet]
    outputs = []
    for output in ("table", "json"):
        command.main(["--width", "200", "-o", output, *dirs])
        outputs.append(capsys.readouterr().out)
    for name in sorted({d["name"] for d in json.loads(outputs[1])["fleet"]["deployments"]}):
        command.main(["--width", "200", "--explain", name, *dirs])
        captured = capsys.readouterr()
        outputs += [captured.out, captured.err]
    for text in outputs:
        leaks = [text[max(0, m.start() - 60) : m.end() + 60] for m in _REPR.finditer(text)]
        assert not leaks, leaks


def test_selector_requirements_read_as_kubectl_prints_them(capsys: pytest.CaptureFixture[str]) -> None:
    fleet = str(observed_examples() / "scheduling" / "no-matching-cluster")
    _, out = _run(capsys, fleet)
    selector = "modelplane.ai/scenario=no-matching-cluster,region in (sa-east-1,sa-west-1)"
    assert f"no cluster matches clusterSelector ({selector})" in out
    _, out = _run(capsys, "--explain", "ml-team/gemma-sa", fleet)
    assert f"clusterSelector: {selector}" in out


@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        pytest.param("spec.scheduler.type", "kai", 'spec.scheduler.type: did you mean "KAI"?', id="kai"),
        pytest.param("spec.serving.backend", "kserve", 'spec.serving.backend: did you mean "KServe"?', id="kserve"),
        pytest.param("spec.cluster.source", "existing", 'spec.cluster.source: did you mean "Existing"?', id="existing"),
        pytest.param("spec.scheduler.type", "Slurm", None, id="nothing-near"),
    ],
)
def test_did_you_mean_enum_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: str, hint: str | None
) -> None:
    fleet = _quickstart(tmp_path, _set(field, value), "cluster.yaml")
    code, out = _run(capsys, str(fleet))
    assert code == Exit.REFUSED
    assert f'* {field}: Unsupported value: "{value}": supported values:' in out
    hints = [line for line in out.splitlines() if line.startswith("  hint: ")]
    assert hints == ([f"  hint: {hint}"] if hint else [])


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        pytest.param(
            {"modelplane.ai/deployment": "llama8b"},
            "spec.endpoints[0].selector (modelplane.ai/deployment=llama8b) matches no ModelEndpoint, and no "
            "ModelDeployment in default composes one it would match; did you mean modelplane.ai/deployment=llama-8b?",
            id="value",
        ),
        pytest.param(
            {"modelplane.ai/deploymnet": "llama-8b"},
            "did you mean modelplane.ai/deployment=llama-8b?",
            id="key",
        ),
        pytest.param(
            {"modelplane.ai/deployment": "Llama-8B"}, "did you mean modelplane.ai/deployment=llama-8b?", id="case"
        ),
        pytest.param(
            {"modelplane.ai/deployment": "gpt-5"},
            "spec.endpoints[0].selector (modelplane.ai/deployment=gpt-5) matches no ModelEndpoint, and no "
            "ModelDeployment in default composes one it would match",
            id="nothing-near",
        ),
        pytest.param({"modelplane.ai/deployment": "llama-8b"}, None, id="matches"),
    ],
)
def test_did_you_mean_service_selector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], labels: dict[str, str], want: str | None
) -> None:
    fleet = _first(tmp_path, **{"1.spec.endpoints.0.selector.matchLabels": labels})
    # Judged offline too: no deployment will ever compose an endpoint the selector matches.
    for flags in ([], ["--assume-ready"]):
        code, out = _run(capsys, *flags, str(fleet))
        line = next((x for x in out.splitlines() if x.startswith("  [exit 6] ModelService default/llama-8b: ")), None)
        if want is None:
            assert line is None, line
            continue
        assert line is not None, out
        assert want in line
        assert "did you mean" in line or "nothing-near" not in want
        assert code == (Exit.UNPLACED if not flags else Exit.UNROUTED)


def test_a_service_selecting_a_hand_written_endpoint_is_matched(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = _run(capsys, str(observed_examples() / "platform"), str(observed_examples() / "models"))
    assert "ModelService ml-team/assistant" not in out.split("Findings")[1]


@pytest.mark.parametrize(
    ("api_version", "kind", "refused", "hints"),
    [
        pytest.param(
            "modelplane.ai/v1alpha1", "ModelServic", True, ["kind: did you mean ModelService?"], id="our-kind"
        ),
        pytest.param(
            "modelplane.ai/v1",
            "InferenceClass",
            True,
            ["apiVersion: did you mean modelplane.ai/v1alpha1?"],
            id="version",
        ),
        pytest.param(
            "modelpane.ai/v1alpha1",
            "InferenceClass",
            True,
            ["apiVersion: did you mean modelplane.ai/v1alpha1?"],
            id="our-group-misspelt",
        ),
        pytest.param("v1", "Secert", True, ["kind: did you mean Secret?"], id="core-kind"),
        pytest.param("v1", "secret", True, ["kind: did you mean Secret?"], id="core-kind-case"),
        pytest.param("apps/v1", "Deploymnet", True, ["kind: did you mean Deployment?"], id="apps-kind"),
        pytest.param("keda.sh/v1alpha1", "ScaledObjekt", False, ["kind: did you mean ScaledObject?"], id="crd-kind"),
        pytest.param("example.com/v1", "Widget", False, [], id="unknown-crd"),
    ],
)
def test_did_you_mean_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], api_version: str, kind: str, refused: bool, hints: list[str]
) -> None:
    fleet = _quickstart(tmp_path)
    path = fleet / "extra.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}))
    code, out = _run(capsys, str(fleet))
    if refused:
        assert code == Exit.REFUSED
        assert (
            f'error: resource mapping not found for name: "x" from "{path}": no matches for kind "{kind}" '
            f'in version "{api_version}"'
        ) in out
        assert [x for x in out.splitlines() if x.startswith("  hint: ")] == [f"  hint: {h}" for h in hints]
    else:
        # The cluster may have a CRD the preview has not seen: listed as not checked, with the near kind.
        assert code == Exit.OK
        note = next(x for x in out.splitlines() if x.startswith("note: not checked"))
        # A kind without a schema is taken as namespaced (kubectl cannot tell either): in default.
        assert note == f"note: not checked (no schema found): {kind} default x ({path})" + "".join(
            f"; {h}" for h in hints
        )


@pytest.mark.parametrize(
    ("file", "edit"),
    [
        pytest.param("deployment.yaml", _set("spec.replcias", 3), id="unknown-field"),
        pytest.param("service.yaml", _set("spec.endpoints.0.weight", 0), id="invalid-value"),
        pytest.param("cluster.yaml", _set("spec.scheduler.type", "kai"), id="enum"),
        pytest.param("deployment.yaml", _set("spec.nodeSelector.cel", "device.driver =="), id="cel"),
        pytest.param("class.yaml", _set("kind", "InferenceClas"), id="kind"),
        pytest.param("deployment.yaml", _drop("spec.nodeSelector"), id="required"),
    ],
)
def test_every_refusal_names_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, edit: Callable[[dict[str, Any]], None]
) -> None:
    fleet = _quickstart(tmp_path, edit, file)
    code, out = _run(capsys, str(fleet))
    assert code == Exit.REFUSED
    refused = out.split("Refused by admission (not rendered)\n")[1].split("\n\n")[0]
    messages = [x for x in refused.splitlines() if not x.startswith((" ", "*"))]
    assert len(messages) == 1, refused
    assert f'"{fleet / file}"' in messages[0]
    code, out = _run(capsys, "-o", "json", str(fleet))
    (entry,) = json.loads(out)["refused"]
    assert entry["file"] == str(fleet / file)
    assert f'"{fleet / file}"' in entry["message"]


@pytest.mark.parametrize(
    ("edit", "flags", "want"),
    [
        pytest.param(None, [], Exit.OK, id="placed"),
        pytest.param(_set("spec.replicas", 3), [], Exit.UNPLACED, id="unplaced"),
        pytest.param(_set("spec.replicas", 3), ["--allow-unscheduled"], Exit.OK, id="unplaced-allowed"),
        pytest.param(_set("spec.nodeSelector.cel", L4 + " &&"), [], Exit.REFUSED, id="refused"),
    ],
)
def test_explain_exit_code(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], None] | None,
    flags: list[str],
    want: Exit,
) -> None:
    fleet = _quickstart(tmp_path, edit)
    code = command.main([*flags, "--explain", "default/qwen", str(fleet)])
    captured = capsys.readouterr()
    assert code == want, captured.err
    if want is Exit.REFUSED:
        # Not rendered, so nothing to explain: the refusal says why.
        assert captured.err.startswith(f'modelplane preview: error when creating "{fleet}/deployment.yaml"')
        assert "<input>:1:66:" in captured.err
    else:
        assert captured.out.startswith("Explain ModelDeployment default/qwen")


def test_explain_with_against(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A plan asks why a replica moves or stays unplaced: both sides answer, base first; the exit code is the head's.
    head = _first(tmp_path, **{"0.spec.workers.topology.tensor": 16})
    args = ["--assume-ready", "--explain", "default/llama-8b", "--against", str(FIRST), str(head)]
    code, out = _run(capsys, *args)
    assert code == Exit.UNPLACED
    base, _, after = out.partition(f"head ({head}):\n")
    assert base.startswith(f"base ({FIRST}):\nExplain ModelDeployment default/llama-8b\n")
    assert after.startswith("Explain ModelDeployment default/llama-8b\n")
    flat = [" ".join(x.split()) for x in (base, after)]
    assert "llama-8b-0 lab l4 0 0 0 chosen OnlyCandidate" in flat[0]
    assert "llama-8b-0 - - - - - unplaced NoMatchingPools" in flat[1]
    code, out = _run(capsys, "-o", "json", *args)
    doc = json.loads(out)
    assert sorted(doc) == ["base", "head", "kind", "schemaVersion"]
    assert [s["chosen"] for s in doc["base"]["steps"]] == ["lab"]
    assert [s["reason"] for s in doc["head"]["steps"]] == ["NoMatchingPools"]
    # New in the head: the base says it has none, the head explains it.
    code, out = _run(capsys, "--explain", "default/qwen", "--against", str(FIRST), str(QUICKSTART))
    assert code == Exit.OK
    assert out.startswith(f"base ({FIRST}): no ModelDeployment default/qwen among the manifests")
    assert f"head ({QUICKSTART}):\nExplain ModelDeployment default/qwen" in out
