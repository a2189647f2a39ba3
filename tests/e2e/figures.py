"""Figures the e2e run prints (never asserts): build, bring-up and apply-to-ready times, the tier's wall time."""

from __future__ import annotations

import time

FIGURES: dict[str, float] = {}
NOTES: list[str] = []
# What warm `make e2e` may take on a 2-core machine (issue 22's budget): printed beside the run's wall time.
BUDGET_SECONDS = 15 * 60
# Every condition wait of the run: (seconds it took, what it waited for). The slowest are printed.
WAITS: list[tuple[float, str]] = []


class Stopwatch:
    """Seconds since ``kubectl apply``, recorded once per milestone under ``<scenario>: apply → <milestone>``."""

    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.began = time.monotonic()

    def mark(self, milestone: str) -> float:
        seconds = round(time.monotonic() - self.began, 1)
        FIGURES.setdefault(f"{self.scenario}: apply -> {milestone} (s)", seconds)
        return seconds


def minutes(seconds: float) -> str:
    """``seconds`` as ``12m31s``."""
    whole = round(seconds)
    return f"{whole // 60}m{whole % 60:02d}s"
