"""A problem with user input, named by the field it is in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pydantic


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


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, str) and part[:1].isupper():
            continue  # the name of a union member's model (e.g. an int-or-string's branch), not a field
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def invalid(err: pydantic.ValidationError) -> list[Problem]:
    """The problems of a model's validation error, one per field, each named by its path."""
    # Each branch of a union reports its own error on the same field: say them as one problem.
    by_field: dict[str, list[str]] = {}
    for e in err.errors(include_url=False):
        messages = by_field.setdefault(_path(e["loc"]), [])
        if e["msg"] not in messages:
            messages.append(e["msg"])
    return [Problem(field, " or ".join(messages)) for field, messages in by_field.items()]
