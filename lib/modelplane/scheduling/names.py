"""Stable, DNS-safe names for the replicas of a ModelDeployment.

Replica ``i`` of deployment ``d`` is ``d-i`` when ``d`` is a DNS label and the
result fits in 63 characters. Otherwise (a name with dots, or a long one) it
is ``<d, sanitised and cut>-<8 hex digits of sha256(d)>-i``, so two
deployments whose sanitised names collide still get different replicas. Names
depend only on the deployment's name and the ordinal: they never change
across reconciles.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 63
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_UNSAFE = re.compile(r"[^a-z0-9-]+")
_ORDINAL = re.compile(r"-(0|[1-9][0-9]*)$")


def replica_name(deployment: str, ordinal: int) -> str:
    """The name of replica ``ordinal`` of ``deployment``.

    Args:
        deployment: The ModelDeployment's name.
        ordinal: The replica's ordinal, from 0.

    Returns:
        A DNS label of at most 63 characters.

    Raises:
        ValueError: ``ordinal`` is negative.
    """
    if ordinal < 0:
        msg = f"a replica ordinal must not be negative, not {ordinal}"
        raise ValueError(msg)
    suffix = f"-{ordinal}"
    if _LABEL.match(deployment) and len(deployment) + len(suffix) <= MAX_NAME:
        return deployment + suffix
    digest = hashlib.sha256(deployment.encode()).hexdigest()[:8]
    room = MAX_NAME - len(suffix) - len(digest) - 1
    base = _UNSAFE.sub("-", deployment.lower())[:room].strip("-")
    return f"{base}-{digest}{suffix}" if base else f"r{digest}{suffix}"


def replica_ordinal(deployment: str, name: str) -> int | None:
    """The ordinal of a replica named by ``replica_name``, or None for any other name."""
    match = _ORDINAL.search(name)
    if match is None:
        return None
    ordinal = int(match.group(1))
    return ordinal if replica_name(deployment, ordinal) == name else None
