"""The README walkthrough "Your first ModelDeployment" runs as written and prints what it shows."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass

import pytest

from modelplane.repo import ROOT

_SECTION = "## Your first ModelDeployment"
_BLOCK = re.compile(r"```(sh|text)\n(.*?)```", re.S)
_EXIT = re.compile(r"#\s*exit (\d+)\s*$")


@dataclass(frozen=True)
class Command:
    line: str
    exit_code: int
    shows: tuple[str, ...]


def _flat(text: str) -> str:
    return " ".join(text.split())


def walkthrough() -> list[Command]:
    """The walkthrough's commands, each with the exit code its comment states and the lines shown after it."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index(_SECTION)
    end = readme.find("\n## ", start + len(_SECTION))
    section = readme[start : end if end != -1 else None]
    commands: list[Command] = []
    for kind, body in _BLOCK.findall(section):
        if kind == "sh":
            (line,) = [x for x in body.splitlines() if x.strip()]
            match = _EXIT.search(line)
            assert match, f"state the exit code of {line!r} in a '# exit N' comment"
            commands.append(Command(line[: match.start()].strip(), int(match.group(1)), ()))
        else:
            assert commands, "a text block shows the output of the command before it"
            last = commands[-1]
            commands[-1] = Command(last.line, last.exit_code, tuple(x for x in body.splitlines() if x.strip()))
    return commands


def test_the_walkthrough_has_commands() -> None:
    assert len(walkthrough()) >= 3


@pytest.mark.parametrize("command", [pytest.param(c, id=c.line) for c in walkthrough()])
def test_walkthrough_command(command: Command) -> None:
    assert command.line.startswith(".venv/bin/modelplane "), command.line
    env = {**os.environ, "COLUMNS": "120"}
    done = subprocess.run(
        ["bash", "-c", command.line], cwd=ROOT, capture_output=True, text=True, env=env, check=False, timeout=600
    )
    assert done.returncode == command.exit_code, done.stdout + done.stderr
    out = _flat(done.stdout)
    for line in command.shows:
        assert _flat(line) in out, f"{line!r} not in the output of {command.line}:\n{done.stdout}"
