"""A problem with user input, named by the field it is in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec: the field's path (e.g. ``spec.devices[0].count``) and why."""

    field: str
    message: str

    def __str__(self) -> str:
        """Render as ``field: message``."""
        return f"{self.field}: {self.message}"


def describe(problems: Iterable[Problem]) -> str:
    """Join problems into one condition message, in the order given."""
    return "; ".join(str(p) for p in problems)
