"""No workload scheduler: the cluster's default scheduler places the pods unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.schedulers.base import Gang, Wrapping


def wrap(gang: Gang, settings: Mapping[str, Any]) -> Wrapping:  # noqa: ARG001 - the table's signature
    """Leave the workload as it is."""
    return Wrapping()
