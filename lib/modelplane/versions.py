"""Semantic versions as DRA device attributes use them (semver 2.0.0)."""

from __future__ import annotations

import re

# semver.org's reference expression: no leading zeros, optional pre-release and build.
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def is_semver(value: str) -> bool:
    """Report whether ``value`` is a semver 2.0.0 version such as ``9.0.0``."""
    return SEMVER.match(value) is not None
