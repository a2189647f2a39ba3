"""Tables that fit a width without ever cutting a figure.

A table is laid out by the first of these that fits:

1. At its natural width (each column as wide as its widest line), three spaces
   between columns, as rich lays out a borderless table.
2. Shrunk: the wrapping column (the last unless
   named) gives up width first, then every other column under one common cap.
   Lines wrap at spaces; a word too long for its column is folded in the
   wrapping column and shortened in the middle with ``…`` elsewhere (a name
   keeps its start and its end, which tells ``llama-8b-fp8-0`` from ``-1``).
   No column goes below its minimum: its figures (``16``, ``1/1``, ``45.0%``,
   ``20 → 24``, ``198.51.100.7``) and header words whole, names ``NAME_MIN``
   cells, the wrapping column ``WRAP_MIN``.
3. In bands: when even the minimums do not fit, the columns continue in a
   second table (and a third...), each repeating the first column, so every
   column is shown and none is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.text import Text

NAME_MIN = 16  # a shortened word keeps this many cells, the ellipsis included
WRAP_MIN = 24  # the wrapping column is at least this wide (or as wide as its widest line, if less)
_FOLD_MIN = 8  # a folded word keeps at least this many cells a line
_NATURAL_GAP, _TIGHT_GAP = 3, 2
_EDGES = 2  # a space at each edge, as rich draws a borderless table

# A figure: a count, a ratio, a percentage, an address or a version, with the punctuation around it.
_FIGURE = re.compile(r"[(\[]?[-+]?\d[\d.,:/%]*[)\],;:%]*")
# A cell line made of figures only (``20 → 24``, ``4 x 8``, ``- → 12``): kept on one line.
_FIGURE_LINE = re.compile(r"[-+\d.,:/%x→() ]*\d[-+\d.,:/%x→() ]*")
_WORD = re.compile(r"\S+\s*")


def is_figure(word: str) -> bool:
    """Whether ``word`` is a figure a table must never cut."""
    return _FIGURE.fullmatch(word) is not None


def _line_minimum(line: str, *, fold: bool) -> int:
    if _FIGURE_LINE.fullmatch(line):
        return cell_len(line.rstrip())
    least = 0
    for word in line.split():
        if is_figure(word):
            least = max(least, cell_len(word))
        else:
            least = max(least, min(cell_len(word), _FOLD_MIN if fold else NAME_MIN))
    return least


@dataclass(frozen=True)
class _Column:
    header: str
    cells: tuple[Text, ...]
    wraps: bool

    @cached_property
    def widest(self) -> int:
        lines = [self.header, *(line for c in self.cells for line in c.plain.split("\n"))]
        return max(cell_len(line) for line in lines)

    @cached_property
    def natural(self) -> int:
        # rich's min_width of the wrapping column, kept so a table that fits is laid out as before
        return max(self.widest, WRAP_MIN) if self.wraps else self.widest

    @cached_property
    def minimum(self) -> int:
        least = max((cell_len(w) for w in self.header.split()), default=1)
        for cell in self.cells:
            for line in cell.plain.split("\n"):
                least = max(least, _line_minimum(line, fold=self.wraps))
        return max(least, min(self.widest, WRAP_MIN)) if self.wraps else max(least, 1)


def _cut_middle(line: Text, width: int) -> Text:
    """``line`` in ``width`` cells: its start, ``…``, its end (a name's suffix tells replicas apart)."""
    keep = max(width - 1, 0)
    head = keep // 2
    tail = keep - head
    plain = line.plain
    while head + tail > 0 and cell_len(plain[:head]) + cell_len(plain[len(plain) - tail :]) > keep:
        if tail >= head:
            tail -= 1
        else:
            head -= 1
    return Text.assemble(line[:head], "…", line[len(plain) - tail :] if tail else "")


def _fold(line: Text, width: int) -> list[Text]:
    parts, start = [], 0
    plain = line.plain
    while start < len(plain):
        end = start + 1
        while end < len(plain) and cell_len(plain[start : end + 1]) <= width:
            end += 1
        parts.append(line[start:end])
        start = end
    return parts


def wrap(cell: Text, width: int, *, fold: bool) -> list[Text]:
    """``cell`` as lines of at most ``width`` cells, wrapped at spaces.

    A word longer than ``width`` is folded (``fold``) or shortened with ``…``; a
    figure is never longer than ``width``, since no column is narrower than its figures.
    """
    out: list[Text] = []
    for line in cell.split("\n", allow_blank=True):
        if cell_len(line.plain) <= width:
            out.append(line)
            continue
        current: Text | None = None
        for match in _WORD.finditer(line.plain):
            word = line[match.start() : match.end()]
            if current is not None and cell_len(current.plain) + cell_len(word.plain.rstrip()) <= width:
                current.append_text(word)
                continue
            if current is not None:
                out.append(current)
            current = word
            current.rstrip()
            if cell_len(current.plain) > width:
                pieces = _fold(current, width) if fold else [_cut_middle(current, width)]
                out.extend(pieces[:-1])
                current = pieces[-1]
            current = current.copy()
            current.append(" " * (len(match.group()) - len(match.group().rstrip())))
        if current is not None:
            out.append(current)
    for line in out:
        line.rstrip()
    return out


@dataclass(frozen=True)
class _Band:
    columns: tuple[int, ...]
    widths: tuple[int, ...]
    gap: int


def _capped(widths: Sequence[int], minimums: Sequence[int], budget: int) -> list[int]:
    """Every width under one cap, the highest that fits ``budget``, none below its minimum; spare cells back."""
    fitted = list(widths)
    low, high = 0, max(widths, default=0)
    while low < high:  # the highest cap whose total fits
        cap = (low + high + 1) // 2
        if sum(max(m, min(w, cap)) for w, m in zip(widths, minimums, strict=True)) <= budget:
            low = cap
        else:
            high = cap - 1
    fitted = [max(m, min(w, low)) for w, m in zip(widths, minimums, strict=True)]
    spare = budget - sum(fitted)
    for i, w in enumerate(widths):
        if spare <= 0:
            break
        if fitted[i] < w:
            fitted[i] += 1
            spare -= 1
    return fitted


def _shrink(natural: Sequence[int], minimums: Sequence[int], wrapping: int | None, budget: int) -> list[int]:
    widths = list(natural)
    others = [i for i in range(len(widths)) if i != wrapping]
    if wrapping is not None:  # the wrapping column gives up its width first
        widths[wrapping] = max(minimums[wrapping], budget - sum(widths[i] for i in others))
    room = budget - (widths[wrapping] if wrapping is not None else 0)
    for i, w in zip(others, _capped([widths[i] for i in others], [minimums[i] for i in others], room), strict=True):
        widths[i] = w
    return widths


def _budget(width: int, count: int, gap: int) -> int:
    return width - _EDGES - gap * (count - 1)


def _fit(columns: Sequence[_Column], indices: tuple[int, ...], width: int) -> _Band | None:
    natural = [columns[i].natural for i in indices]
    minimums = [columns[i].minimum for i in indices]
    wrapping = next((n for n, i in enumerate(indices) if columns[i].wraps), None)
    budget = _budget(width, len(indices), _NATURAL_GAP)
    if sum(natural) <= budget:
        return _Band(indices, tuple(natural), _NATURAL_GAP)
    if wrapping is not None and sum(natural) - natural[wrapping] + minimums[wrapping] <= budget:
        return _Band(indices, tuple(_shrink(natural, minimums, wrapping, budget)), _NATURAL_GAP)
    budget = _budget(width, len(indices), _TIGHT_GAP)
    if sum(minimums) > budget:
        return None
    return _Band(indices, tuple(_shrink(natural, minimums, wrapping, budget)), _TIGHT_GAP)


def _bands(columns: Sequence[_Column], width: int) -> list[_Band]:
    whole = _fit(columns, tuple(range(len(columns))), width)
    if whole is not None:
        return [whole]
    # Each band repeats the first column, so a row can be followed from band to band.
    bands: list[_Band] = []
    current: tuple[int, ...] = (0,)
    for i in range(1, len(columns)):
        if len(current) > 1 and _fit(columns, (*current, i), width) is None:
            bands.append(_fit(columns, current, width) or _widest(columns, current))
            current = (0,)
        current = (*current, i)
    bands.append(_fit(columns, current, width) or _widest(columns, current))
    return bands


def _widest(columns: Sequence[_Column], indices: tuple[int, ...]) -> _Band:
    """Columns whose figures alone pass the width: at their minimums, wider than asked, nothing cut."""
    return _Band(indices, tuple(columns[i].minimum for i in indices), _TIGHT_GAP)


class FittedTable:
    """A table in the preview's style (a header rule, no borders) that fits any width and cuts no figure."""

    def __init__(self, *headers: str, title: str = "", wrap: str = "") -> None:
        """Columns named ``headers``; ``wrap`` (else the last) wraps long lines and gives up width first."""
        self.title = title
        self.headers = list(headers)
        self.wrapping = self.headers.index(wrap) if wrap in self.headers else len(self.headers) - 1
        self.rows: list[tuple[Text, ...]] = []

    def add_row(self, *cells: str | Text) -> None:
        """Add a row; a missing cell is empty, and an extra one gets a column without a header."""
        while len(cells) > len(self.headers):
            self.headers.append("")
        self.rows.append(tuple(c if isinstance(c, Text) else Text(c) for c in cells))

    def _columns(self) -> list[_Column]:
        return [
            _Column(header, tuple(_cell(row, i) for row in self.rows), wraps=i == self.wrapping)
            for i, header in enumerate(self.headers)
        ]

    def lines(self, width: int) -> list[Text]:
        """The table as lines of at most ``width`` cells (trailing spaces dropped), or wider only for a figure."""
        if not self.headers:
            return []
        columns = self._columns()
        out: list[Text] = []
        for n, band in enumerate(_bands(columns, width)):
            title = self.title if n == 0 else f"{self.title} (continued)".strip()
            if title:
                out.append(Text(title, style="bold"))
            out.append(Text(""))  # where rich draws the top edge
            out.extend(_band_lines(columns, band, self.rows))
            out.append(Text(""))  # the bottom edge
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Render fitted to the console's width."""
        for line in self.lines(options.max_width):
            yield from line.render(console)
            yield Segment.line()


def _cell(row: tuple[Text, ...], i: int) -> Text:
    return row[i] if i < len(row) else Text("")


def _band_lines(columns: Sequence[_Column], band: _Band, rows: Iterable[tuple[Text, ...]]) -> Iterator[Text]:
    header = [Text(columns[i].header, style="bold") for i in band.columns]
    yield from _row_lines(header, band, [columns[i].wraps for i in band.columns])
    rule = sum(band.widths) + band.gap * (len(band.widths) - 1)
    yield Text(" " + "─" * rule)
    for row in rows:
        yield from _row_lines([_cell(row, i) for i in band.columns], band, [columns[i].wraps for i in band.columns])


def _row_lines(cells: Sequence[Text], band: _Band, folds: Sequence[bool]) -> Iterator[Text]:
    wrapped = [wrap(c, w, fold=f) for c, w, f in zip(cells, band.widths, folds, strict=True)]
    for n in range(max(len(lines) for lines in wrapped)):
        line = Text(" ")
        for i, lines in enumerate(wrapped):
            part = lines[n] if n < len(lines) else Text("")
            line.append_text(part)
            if i < len(wrapped) - 1:
                line.append(" " * (band.widths[i] - cell_len(part.plain) + band.gap))
        line.rstrip()
        yield line
