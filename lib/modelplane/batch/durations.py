"""Durations written as hours, minutes and seconds (``6h``, ``1h30m``, ``90s``), as the XRD admits them."""

from __future__ import annotations

import re

from modelplane.problems import Problem

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
# A Job's activeDeadlineSeconds and ttlSecondsAfterFinished are int64 and int32: keep to what both take.
_MOST = 2**31 - 1


class InvalidDurationError(ValueError):
    """A duration that is not one, naming its field."""

    def __init__(self, problem: Problem) -> None:
        """Carry the problem; the message is its ``field: message`` form."""
        super().__init__(str(problem))
        self.problem = problem


def seconds(text: str, field: str) -> int:
    """The seconds of a duration such as ``1h30m``.

    Raises:
        InvalidDurationError: It is empty, not of that form, zero or beyond what a Job takes.
    """
    match = _DURATION.match(text)
    if not text or match is None:
        raise InvalidDurationError(Problem(field, f"{text[:32]!r} is not a duration such as 6h, 1h30m or 90s"))
    hours, minutes, secs = (int(g or 0) for g in match.groups())
    total = hours * 3600 + minutes * 60 + secs
    if not 0 < total <= _MOST:
        raise InvalidDurationError(Problem(field, f"{text!r} must be more than 0s and at most {_MOST}s"))
    return total
