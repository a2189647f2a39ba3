"""Never a wrong figure: the preview's tables at any width from 60 up; goldens at 60, 80 and 120 columns."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from modelplane.preview import command
from tests.golden.cases import observed_examples
from tests.preview.test_explain import check_golden
from tests.preview.test_fitted import _figures

EXAMPLES = observed_examples()
FLEET = [str(EXAMPLES / "platform"), str(EXAMPLES / "models")]
_RULE = re.compile(r" ─+")
# Every column of every table, as a user looks for them.
COLUMNS = {
    "GPUs": ("cluster", "pool", "class", "nodes x GPUs", "declared", "observed", "in use", "free", "source"),
    "Clusters": ("cluster", "source", "scheduler", "backend", "ready", "serving stack", "labels"),
    "Deployments": ("deployment", "ready", "placed", "GPUs/replica", "shape", "where"),
    "Services": ("service", "address", "routed", "backends (weight → share)"),
    "Helm releases": ("installs into", "releases (chart version)", "ready"),
}


def _preview(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = command.main(list(args))
    return code, capsys.readouterr().out


def tables(out: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """Each table printed: its title, its header lines and its rows (a band continued is a table of its own)."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if not _RULE.fullmatch(line):
            continue
        top = i - 1
        while lines[top].strip():
            top -= 1
        end = i + 1
        while end < len(lines) and lines[end].strip():
            end += 1
        yield lines[top - 1], lines[top + 1 : i], lines[i + 1 : end]


def _every_column_shown(out: str) -> None:
    for title, columns in COLUMNS.items():
        shown = set()
        for name, header, _ in tables(out):
            if name in (title, f"{title} (continued)"):
                shown |= set(" ".join(header).split())
        for column in columns:
            assert set(column.split()) <= shown, f"{title}: column {column!r} missing\n{out}"


def _fits(out: str, width: int) -> None:
    for title, header, rows in tables(out):
        for line in (*header, *rows):
            assert len(line) <= width, f"{title}: {len(line)} > {width} columns: {line!r}"


@pytest.mark.usefixtures("once")
def test_width_80_never_cuts_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    _, wide = _preview(capsys, "--width", "400", "--assume-ready", *FLEET)
    code, out = _preview(capsys, "--width", "80", "--assume-ready", *FLEET)
    assert code == 0
    # Every figure of the wide preview, none cut, none dropped, none made up.
    assert _figures(out) == _figures(wide)
    _fits(out, 80)
    _every_column_shown(out)
    flat = "\n".join(" ".join(line.split()) for line in out.splitlines())
    # The GPUs the issue saw cut: in use 16 and free 12, ready 1/1.
    assert "eu-west-kueue h100 nvidia-h100-8 2 x 8 16 16 16 0" in flat
    assert "us-east-kai h100 nvidia-h100-8 4 x 8 32 20 20 12" in flat
    assert "ml-team/kimi-k2 1/1 1/1 16 TP8 PP2" in flat


@pytest.mark.parametrize(
    "width",
    [
        pytest.param("-5", id="negative"),
        pytest.param("0", id="zero"),
        pytest.param("59", id="below-60"),
        pytest.param("80.5", id="not-an-integer"),
        pytest.param("wide", id="not-a-number"),
    ],
)
def test_width_below_60_is_usage_error(capsys: pytest.CaptureFixture[str], width: str) -> None:
    with pytest.raises(SystemExit) as exited:
        command.main(["--width", width, str(EXAMPLES / "quickstart")])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --width: '{width}': a number of columns, at least 60" in err


@pytest.mark.usefixtures("once")
def test_width_from_the_environment_is_never_below_60(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "20")
    assert command.main(["--assume-ready", *FLEET]) == 0
    out = capsys.readouterr().out
    _fits(out, 60)
    assert any(len(line) > 40 for _, _, rows in tables(out) for line in rows)


LONG_NAME = "a-deployment-whose-name-is-sixty-one-characters-long-for-test"


@pytest.fixture(scope="module")
def long_named(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart with its deployment and service named with 61 characters."""
    fleet = tmp_path_factory.mktemp("long") / "fleet"
    shutil.copytree(EXAMPLES / "quickstart", fleet)
    for name in ("deployment.yaml", "service.yaml"):
        path = fleet / name
        text = path.read_text().replace("name: qwen", f"name: {LONG_NAME}")
        path.write_text(text.replace("modelplane.ai/deployment: qwen", f"modelplane.ai/deployment: {LONG_NAME}"))
    assert yaml.safe_load((fleet / "deployment.yaml").read_text())["metadata"]["name"] == LONG_NAME
    return fleet


@pytest.mark.usefixtures("once")
@pytest.mark.parametrize("width", [60, 80, 120])
def test_long_name_keeps_every_column(long_named: Path, capsys: pytest.CaptureFixture[str], width: int) -> None:
    assert len(LONG_NAME) == 61
    code, out = _preview(capsys, "--width", str(width), "--assume-ready", str(long_named))
    assert code == 0, out
    _fits(out, width)
    _every_column_shown(out)
    services = [rows for title, _, rows in tables(out) if title.startswith("Services")]
    assert any("Routed" in line for rows in services for line in rows), out
    assert any("100.0%" in line for rows in services for line in rows), out


@pytest.mark.usefixtures("once")
@pytest.mark.parametrize("width", [60, 80, 120])
def test_width_golden(capsys: pytest.CaptureFixture[str], width: int) -> None:
    code, out = _preview(capsys, "--width", str(width), "--assume-ready", *FLEET)
    assert code == 0
    _fits(out, width)
    check_golden(f"preview-width-{width}.txt", out.replace(f"{EXAMPLES}/", "examples/"))


@pytest.mark.parametrize("width", [60, 80, 120])
def test_explain_cache_column_fits(capsys: pytest.CaptureFixture[str], width: int) -> None:
    """The cache column of --explain (spec.modelCacheRef) fits like any other: every phase shown, nothing cut."""
    fleet = [str(EXAMPLES / "platform"), str(EXAMPLES / "model-cache")]
    code, out = _preview(
        capsys, "--width", str(width), "--assume-ready", "--explain", "ml-team/llama-70b-cached", *fleet
    )
    assert code == 0
    _fits(out, width)
    for title in ("Clusters", "Scoring"):
        shown = [
            (header, rows)
            for name, header, rows in tables(out)
            if name.startswith(title) and "cache" in " ".join(header)
        ]
        assert shown, f"{title}: no cache column at width {width}\n{out}"
        cells = " ".join(" ".join(rows) for _, rows in shown)
        assert "Ready" in cells
        assert "Hydrating" in cells
