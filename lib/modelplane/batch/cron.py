"""Cron schedules as a Kubernetes CronJob takes them: five fields, or a macro such as ``@daily``.

Admission checks the shape (five fields of cron characters); this checks each field's values as
the CronJob controller's parser (robfig/cron's standard parser) does, so a schedule such as
``61 * * * *`` is refused with the field that is wrong instead of a CronJob that never runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names of low, low + 1, ... (months, days of the week)
    question: bool = False  # "?" stands for "*" (day of month and day of week only)


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31, question=True),
    _Field("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    # 7 is Sunday as well as 0, as robfig/cron reads it.
    _Field("day of week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat"), question=True),
)
_ITEM = re.compile(r"^(\*|\?|[a-z0-9]+)(?:-([a-z0-9]+))?(?:/([0-9]+))?$")


def _value(text: str, field: _Field) -> int | None:
    if text.isdigit():
        return int(text)
    if text in field.names:
        return field.low + field.names.index(text) if field.name == "month" else field.names.index(text)
    return None


def _item_problem(item: str, field: _Field) -> str:  # noqa: PLR0911 - one return per rule of the parser
    match = _ITEM.match(item.lower())
    if match is None:
        return f"{item!r} is not a value, a range or a step"
    start, end, step = match.groups()
    if start == "?" and not field.question:
        return "? is allowed only in the day of month and day of week"
    if start in ("*", "?"):
        if end is not None:
            return f"{item!r}: * takes no range"
    else:
        for text in filter(None, (start, end)):
            value = _value(text, field)
            if value is None or not field.low <= value <= field.high:
                return f"{text!r} is not in {field.low}-{field.high}"
        low, high = _value(start, field), _value(end, field) if end is not None else None
        if low is not None and high is not None and high < low:
            return f"{item!r}: the range ends before it starts"
    if step is not None and int(step) == 0:
        return f"{item!r}: a step must be at least 1"
    return ""


def problem(schedule: str) -> str:
    """Why ``schedule`` is no cron schedule a CronJob takes ("" when it is one)."""
    text = schedule.strip()
    if text in MACROS:
        return ""
    if text.startswith(("TZ=", "CRON_TZ=")):
        return "a time zone in the schedule is not allowed: the CronJob runs in the cluster's time zone"
    fields = text.split()
    if len(fields) != len(_FIELDS):
        return f"has {len(fields)} fields, a cron schedule has 5 (minute hour day-of-month month day-of-week)"
    for value, field in zip(fields, _FIELDS, strict=True):
        for item in value.split(","):
            why = _item_problem(item, field) if item else "an empty list item"
            if why:
                return f"{field.name} field {value!r}: {why}"
    return ""
