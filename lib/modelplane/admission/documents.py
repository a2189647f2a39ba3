"""The JSON value types every admission module shares; YAML is read by ``modelplane.documents``."""

from __future__ import annotations

from typing import Any

from modelplane.documents import JSON

Schema = dict[str, Any]

__all__ = ["JSON", "Schema"]
