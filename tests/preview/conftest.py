"""Fixtures of the preview tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from modelplane.preview import command
from modelplane.preview.command import Preview


@pytest.fixture(scope="session")
def simulated() -> dict[tuple[Any, ...], Preview]:
    return {}


@pytest.fixture
def once(monkeypatch: pytest.MonkeyPatch, simulated: dict[tuple[Any, ...], Preview]) -> None:
    """Simulate each fleet once per session: for tests that vary only how a preview is printed."""
    run: Callable[..., Preview] = command.run_preview

    def cached(dirs: list[Path], **kwargs: Any) -> Preview:
        key = (tuple(dirs), tuple(sorted(kwargs.items())))
        if key not in simulated:
            simulated[key] = run(dirs, **kwargs)
        return simulated[key]

    monkeypatch.setattr(command, "run_preview", cached)
