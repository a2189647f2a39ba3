"""Read tools/images/*.lock: the pins the images install."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import canonicalize_name

LOCKS = Path(__file__).resolve().parents[2] / "tools" / "images"
_PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^\s\\]+)")


def read_lock(name: str) -> dict[str, str]:
    """Version by canonical distribution name, of one lock file beside tools/images/lock.py."""
    pins: dict[str, str] = {}
    for line in (LOCKS / name).read_text().splitlines():
        m = _PIN.match(line)
        if m:
            pins[str(canonicalize_name(m.group(1)))] = m.group(2)
    return pins
