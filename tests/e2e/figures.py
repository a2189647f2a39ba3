"""Figures the e2e run prints (never asserts): build, bring-up and apply-to-ready times."""

from __future__ import annotations

import time

FIGURES: dict[str, float] = {}
NOTES: list[str] = []


class Stopwatch:
    """Seconds since ``kubectl apply``, recorded once per milestone under ``<scenario>: apply → <milestone>``."""

    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.began = time.monotonic()

    def mark(self, milestone: str) -> float:
        seconds = round(time.monotonic() - self.began, 1)
        FIGURES.setdefault(f"{self.scenario}: apply -> {milestone} (s)", seconds)
        return seconds
