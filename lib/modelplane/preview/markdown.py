"""The preview as GitHub/GitLab-flavoured Markdown, for a pull-request comment.

The text renderers (the preview, the plan, ``--explain``) print through a
console; this one writes what they print as Markdown instead: a bold line as
``**bold**``, a table as a pipe table (whole, never fitted to a width: the
reader's browser wraps it), and every run of other lines as a fenced ``text``
block, so indentation and alignment survive. No colour.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import IO

from rich.console import Console
from rich.style import Style
from rich.text import Text

from modelplane.preview.fitted import FittedTable

_OPEN, _CLOSE = "```text", "```"
_SPECIAL = re.compile(r"([\\`*_<>\[\]|#])")
_FENCE_LIKE = re.compile(r" {0,3}(```|~~~)")


def escape(text: str) -> str:
    """``text`` as literal Markdown: punctuation that would format is backslash-escaped."""
    return _SPECIAL.sub(r"\\\1", text)


def _cell(text: Text) -> str:
    return "<br>".join(escape(line.strip()) for line in text.plain.split("\n")).strip() or " "


def table(t: FittedTable) -> str:
    """``t`` as a pipe table, its title in bold above it, every line of a cell kept (``<br>``)."""
    lines = [f"**{escape(t.title)}**", ""] if t.title else []
    lines.append("| " + " | ".join(escape(h) or " " for h in t.headers) + " |")
    lines.append("|" + "|".join(" --- " for _ in t.headers) + "|")
    lines.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in t.rows)
    return "\n".join(lines) + "\n\n"


def _text(o: object) -> Text:
    """``o`` as text: a string or Text as it is, any other renderable as a plain console prints it."""
    if isinstance(o, Text):
        return o
    if isinstance(o, str):
        return Text(o)
    out = io.StringIO()
    Console(file=out, width=120, color_system=None, markup=False, soft_wrap=True).print(o)
    return Text("\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").split("\n")))


def _bold(text: Text) -> bool:
    style = text.style if isinstance(text.style, Style) else Style.parse(text.style or "none")
    return bool(style.bold)


class MarkdownConsole(Console):
    """A console that writes Markdown: bold lines, pipe tables and fenced blocks of the lines between."""

    def __init__(self, file: IO[str]) -> None:
        """Write to ``file``."""
        super().__init__(file=file, color_system=None, force_terminal=False, markup=False, emoji=False, highlight=False)
        self._fenced = False

    def _write(self, text: str) -> None:
        self.file.write(text)

    def _end_block(self) -> None:
        if self._fenced:
            self._write(_CLOSE + "\n\n")
            self._fenced = False

    def print(self, *objects: object, **_: object) -> None:
        """Write ``objects`` as Markdown; nothing, a blank line, ends a block."""
        if not objects:
            self._end_block()
            return
        if len(objects) == 1 and isinstance(objects[0], FittedTable):
            self._end_block()
            self._write(table(objects[0]))
            return
        texts = [_text(o) for o in objects]
        if all(_bold(t) for t in texts):
            self._end_block()
            self._write("**" + escape(" ".join(t.plain for t in texts)) + "**\n\n")
            return
        if not self._fenced:
            self._write(_OPEN + "\n")
            self._fenced = True
        for line in " ".join(t.plain for t in texts).split("\n"):
            # a line that would close the fence is indented out of its way
            self._write(("    " + line if _FENCE_LIKE.match(line) else line) + "\n")


def closed(text: str) -> str:
    """``text`` with its last fenced block closed (a renderer's output ends wherever its last line does)."""
    lines: Sequence[str] = text.split("\n")
    opened = sum(1 for line in lines if line == _OPEN) - sum(1 for line in lines if line == _CLOSE)
    return text if opened <= 0 else text.rstrip("\n") + "\n" + _CLOSE + "\n"
