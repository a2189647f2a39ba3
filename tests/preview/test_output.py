"""Output: Markdown for a pull-request comment; JSON and YAML documents in camelCase with a schemaVersion."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.panel import Panel
from rich.text import Text

from modelplane.preview import command
from modelplane.preview.document import SCHEMA_VERSION
from modelplane.preview.findings import Exit
from modelplane.preview.markdown import escape
from modelplane.preview.tables import console, markdown_output, plain_ends
from tests.golden.cases import observed_examples
from tests.preview.test_explain import check_golden
from tests.preview.test_plan import _change
from tests.preview.test_width import FLEET

EXAMPLES = observed_examples()
_CELL_BORDER = re.compile(r"(?<!\\)\|")


def _pipe_tables(markdown: str) -> Iterator[list[str]]:
    """The pipe tables of ``markdown``, each as its lines."""
    table: list[str] = []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            table.append(line)
        elif table:
            yield table
            table = []


def _markdown_is_well_formed(out: str) -> None:
    assert "\x1b[" not in out, "no colour in Markdown"
    lines = out.splitlines()
    assert lines.count("```text") == lines.count("```"), "every fenced block is closed"
    tables = list(_pipe_tables(out))
    assert tables, out
    for table in tables:
        header, delimiter, *rows = table
        cells = len(_CELL_BORDER.findall(header))
        assert re.fullmatch(r"\|( --- \|)+", delimiter), delimiter
        for row in rows:
            assert len(_CELL_BORDER.findall(row)) == cells, f"{row!r} has not the header's {cells - 1} cells"


@pytest.mark.usefixtures("once")
def test_markdown_preview_golden(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["-o", "markdown", "--color", "always", "--assume-ready", *FLEET]) == Exit.OK
    out = capsys.readouterr().out
    _markdown_is_well_formed(out)
    assert "| us-east-kai | h100 | nvidia-h100-8 | 4 x 8 | 32 | 20 | 20 | 12 | KAI |" in out
    # A cell of several lines stays one row; brackets that Markdown would read as a link are escaped.
    assert "| llama-70b-0 → us-east-kai \\[h100\\]<br>llama-70b-1 → us-east-kai \\[h100\\] |" in out
    assert out.rstrip().endswith("**exit 0: OK**")
    check_golden("preview.md", out.replace(escape(f"{EXAMPLES}/"), "examples/"))


def test_markdown_plan_golden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = _change(tmp_path)
    args = ["-o", "markdown", "--assume-ready", "--against", str(EXAMPLES / "platform")]
    args += ["--against", str(EXAMPLES / "models"), str(head / "platform"), str(head / "models")]
    assert command.main(args) == Exit.OK
    out = capsys.readouterr().out.replace(escape(str(head)), "HEAD").replace(escape(str(EXAMPLES)), "examples")
    _markdown_is_well_formed(out)
    # Stepped from the base's settled state: the third replica is surged in one wave.
    assert "| added | ml-team/llama-70b-2 | - | gke-us-central1 \\[h200\\] |" in out
    assert "| 1 | ml-team/llama-70b | llama-70b-2 on gke-us-central1 \\[h200\\] | - | 2/3 |" in out
    # The new cluster gets the deployment's pool endpoint (routing mode Pool), not a per-replica one.
    assert "```text\n  control plane:\n    + Backend ml-team/llama-70b-gke-us-central1\n" in out
    check_golden("plan-scale-and-canary.md", out)


@pytest.mark.usefixtures("once")
def test_markdown_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["-o", "markdown", "--explain", "ml-team/llama-70b", *FLEET]) == Exit.OK
    out = capsys.readouterr().out
    _markdown_is_well_formed(out)
    assert out.startswith("**Explain ModelDeployment ml-team/llama-70b**\n")


def _keys(doc: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every key of ``doc`` with its path, but not the keys of data (labels, names of gateways or objects)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield path, k
            if k not in ("labels", "gateways", "errors"):
                yield from _keys(v, f"{path}.{k}")
    elif isinstance(doc, list):
        for v in doc:
            yield from _keys(v, f"{path}[]")


def _documents(tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str) -> Iterator[tuple[str, dict[str, Any]]]:
    quickstart = str(EXAMPLES / "quickstart")
    head = tmp_path / "head"
    head.mkdir()
    for p in (EXAMPLES / "quickstart").glob("*.yaml"):
        (head / p.name).write_text(p.read_text().replace("replicas: 1", "replicas: 2"))
    for kind, args in (
        ("Preview", [quickstart]),
        ("Plan", ["--against", quickstart, str(head)]),
        ("Explanation", ["--explain", "default/qwen", quickstart]),
    ):
        command.main(["-o", output, *args])
        out = capsys.readouterr().out
        yield kind, json.loads(out) if output == "json" else yaml.safe_load(out)


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_documents_are_camel_case_with_a_schema_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    for kind, doc in _documents(tmp_path, capsys, output):
        assert (doc["schemaVersion"], doc["kind"]) == (SCHEMA_VERSION, kind)
        snake = [f"{path}.{key}" for path, key in _keys(doc) if not re.fullmatch(r"[a-z][a-zA-Z0-9]*", key)]
        assert not snake, f"{kind}: keys not in camelCase: {snake}"
        if kind == "Preview":
            pool = doc["fleet"]["clusters"][0]["pools"][0]
            assert (pool["className"], pool["inUse"], pool["gpusPerNode"]) == ("nvidia-l4", 1, 1)
            assert doc["fleet"]["clusters"][0]["labels"]["modelplane.ai/fleet"] == "quickstart"
        if kind == "Plan":
            assert doc["plan"]["gpus"][0]["inUse"] == [1, 2]
            assert doc["head"]["exitCode"] == 0


def test_markdown_keeps_what_it_has_no_markdown_for() -> None:
    out = io.StringIO()
    with markdown_output():
        c = console(out, width=80, color=False)
        c.print(Text("Title", style="bold"))
        c.print("```")  # a line that would close the block
        c.print(Panel("boxed"))  # a renderable the preview does not print today
        text = plain_ends(out.getvalue())
    lines = text.splitlines()
    assert lines[:3] == ["**Title**", "", "```text"]
    assert "    ```" in lines
    assert any("boxed" in line for line in lines)
    assert lines[-1] == "```"
