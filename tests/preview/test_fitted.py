"""Fitted tables: any width from 60 up, every column shown, no figure cut, names shortened in the middle."""

from __future__ import annotations

import io
import re
from collections import Counter

import pytest
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from modelplane.preview.fitted import FittedTable, is_figure, wrap
from modelplane.preview.tables import console, plain_ends

_PUNCTUATION = "()[],:;"


def _figures(text: str) -> Counter[str]:
    """Every figure in ``text``, counted: a figure cut (``16`` as ``1``) or dropped changes the count."""
    words = (w.strip(_PUNCTUATION) for w in text.split())
    return Counter(w for w in words if re.fullmatch(r"\d+(?:[./]\d+)*%?", w))


def _gpus() -> FittedTable:
    t = FittedTable("cluster", "pool", "class", "nodes x GPUs", "declared", "observed", "in use", "free", "source")
    t.add_row("eu-west-kueue", "h100", "nvidia-h100-8", "2 x 8", "16", "16", "16", Text("0", style="dim"), "Kueue")
    t.add_row("gke-us-central1", "h200", "nvidia-h200-8-gke", "2 x 8", "16", "-", "11", "5", "Declared")
    t.add_row("", "l4", "nvidia-l4-1-gke", "8 x 1", "8", "-", "3", "5 (OVERCOMMITTED by 2)", "Declared")
    return t


def _long_names() -> FittedTable:
    name = "ml-team/" + "a-very-long-deployment-name-that-goes-on-and-on-for-a-while-x"[:53]
    t = FittedTable("deployment", "ready", "placed", "GPUs/replica", "shape", "where")
    t.add_row(name, "1/1", Text("1/1", style="green"), "16", "TP8 PP2", f"{name[8:]}-0 → us-east-kai [h100]")
    t.add_row("ml-team/llama-8b-fp8", "0/2", "2/2", "1", "TP1", "llama-8b-fp8-0 → gke [l4]\nllama-8b-fp8-1 → gke [l4]")
    return t


def _services() -> FittedTable:
    t = FittedTable("service", "address", "routed", "backends (weight → share)")
    t.add_row(
        "ml-team/llama-8b",
        "http://203.0.113.10/ml-team/llama-8b",
        "Routed",
        "llama-8b-bf16-0: 2 → 10.0%\nllama-8b-fp8-0: 9 → 45.0%\nllama-8b-fp8-1: 9 → 45.0%",
    )
    return t


TABLES = {"gpus": _gpus, "long-names": _long_names, "services": _services}


def _render(t: FittedTable, width: int) -> str:
    out = io.StringIO()
    console(out, width=width, color=False).print(t)
    return plain_ends(out.getvalue())


@pytest.mark.parametrize("width", [60, 61, 67, 72, 80, 93, 100, 120, 160])
@pytest.mark.parametrize("name", list(TABLES))
def test_any_width_from_60_shows_every_figure_and_column(name: str, width: int) -> None:
    t = TABLES[name]()
    whole = "\n".join(c.plain for row in t.rows for c in row)
    out = _render(t, width)
    assert max(len(line) for line in out.splitlines()) <= width, out
    assert _figures(out) - _figures(" ".join(t.headers)) == _figures(whole), out
    header_words = set(" ".join(line for line in out.splitlines() if not line.startswith(" ─")).split())
    for header in t.headers:
        assert set(header.split()) <= header_words, (header, out)


def test_a_table_that_fits_is_laid_out_as_rich_lays_it_out() -> None:
    ours = _gpus()
    theirs = Table(title="GPUs", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for header in ours.headers:
        theirs.add_column(header, no_wrap=header != "source", min_width=24 if header == "source" else None)
    for row in ours.rows:
        theirs.add_row(*row)
    ours.title = "GPUs"
    out = io.StringIO()
    Console(file=out, width=200, color_system=None, soft_wrap=True, markup=False).print(theirs)
    assert _render(ours, 200) == plain_ends(out.getvalue())


def test_columns_that_cannot_fit_continue_in_a_band_repeating_the_first() -> None:
    out = _render(_gpus(), 60)
    assert "(continued)" in out.splitlines()  # untitled: the continuation says so without a title
    # the cluster column heads both bands, so a row reads across them
    assert sum(1 for line in out.splitlines() if line.split()[:1] == ["cluster"]) == 2


@pytest.mark.parametrize(
    ("cell", "width", "fold", "want"),
    [
        pytest.param("llama-8b-fp8-0", 10, False, ["llam…fp8-0"], id="a-name-keeps-its-end"),
        pytest.param("llama-8b-fp8-0 → gke [l4]", 16, True, ["llama-8b-fp8-0 →", "gke [l4]"], id="wraps-at-spaces"),
        pytest.param("llama-8b-autoscaled-0", 10, True, ["llama-8b-a", "utoscaled-", "0"], id="folds-a-long-word"),
        pytest.param("9 → 45.0%", 5, True, ["9 →", "45.0%"], id="a-figure-moves-whole"),
        pytest.param("a\nb", 5, False, ["a", "b"], id="lines-kept"),
    ],
)
def test_wrap(cell: str, width: int, fold: bool, want: list[str]) -> None:
    assert [line.plain for line in wrap(Text(cell), width, fold=fold)] == want


def test_shortened_names_stay_told_apart() -> None:
    t = FittedTable("replica", "free", "address", "where", wrap="where")
    for i in range(2):
        t.add_row(f"ml-team/llama-8b-fp8-with-a-long-suffix-{i}", "1", "http://example.com/" + "x" * 40, "a b c")
    rows = [line.split()[0] for line in _render(t, 60).splitlines()[3:5]]
    assert len(set(rows)) == 2, rows
    assert all("…" in r for r in rows), rows


@pytest.mark.parametrize(
    ("word", "figure"),
    [
        pytest.param("16", True, id="count"),
        pytest.param("1/1", True, id="ratio"),
        pytest.param("45.0%", True, id="percent"),
        pytest.param("198.51.100.7", True, id="address"),
        pytest.param("(5", True, id="in-parentheses"),
        pytest.param("llama-70b", False, id="name"),
        pytest.param("TP8", False, id="shape"),
    ],
)
def test_is_figure(word: str, figure: bool) -> None:
    assert is_figure(word) is figure


def test_rows_longer_or_shorter_than_the_header_do_not_raise() -> None:
    t = FittedTable("a", "b")
    t.add_row("1")
    t.add_row("1", "2", "3")
    out = _render(t, 60)
    assert "3" in out
    assert _render(FittedTable(), 60) == ""
