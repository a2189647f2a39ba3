"""The result contract: what a batch worker reports when it ends, read from its container's termination message.

A worker (``batch.py``, or any engine that plugs in) writes one JSON object to its termination
message (``/dev/termination-log``, at most 4096 bytes)::

    {"total": 1000, "completed": 998, "failed": 2, "results": "s3://b/out.jsonl", "errors": "s3://b/err.jsonl"}

``total``, ``completed`` and ``failed`` are counts of requests (non-negative integers, all three
required); ``results`` and ``errors`` are where the files were delivered (optional: a worker that
could not deliver leaves them out). Anything else in the message is ignored; a message that is not
such an object reports nothing, and the run's phase still follows its Job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

_COUNTS = ("total", "completed", "failed")


@dataclass(frozen=True)
class Counts:
    """Requests of a run (``status.requestCounts``)."""

    total: int
    completed: int
    failed: int

    def status(self) -> dict[str, int]:
        """As ``status.requestCounts``."""
        return {"total": self.total, "completed": self.completed, "failed": self.failed}


@dataclass(frozen=True)
class Report:
    """What a worker reported: its counts, and where it delivered its files ("" when it did not say)."""

    counts: Counts
    results: str = ""
    errors: str = ""


def read_report(message: str) -> Report | None:
    """The report in a termination message; None when it holds none."""
    try:
        found = json.loads(message)
    except (ValueError, TypeError):
        return None
    if not isinstance(found, dict):
        return None
    values = [v for v in (found.get(k) for k in _COUNTS) if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    if len(values) != len(_COUNTS):
        return None
    total, completed, failed = values
    results, errors = found.get("results"), found.get("errors")
    return Report(
        Counts(total, completed, failed),
        results if isinstance(results, str) else "",
        errors if isinstance(errors, str) else "",
    )
