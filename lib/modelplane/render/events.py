"""The events a reconcile emits, which ``crossplane render`` prints as ``Result`` objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.render.model import RENDER_API_VERSION

__all__ = [
    "REASON_COMPOSE",
    "REASON_NAMESPACE_OVERRIDDEN",
    "REASON_SELECT_COMPOSITION",
    "Event",
    "normal",
    "warning",
]

# The reasons the XR reconciler gives its events (a function's result without one gets REASON_COMPOSE).
REASON_SELECT_COMPOSITION = "SelectComposition"
REASON_COMPOSE = "ComposeResources"
REASON_NAMESPACE_OVERRIDDEN = "NamespaceOverridden"


@dataclass(frozen=True)
class Event:
    """A Kubernetes event about the XR."""

    type: str  # Normal or Warning
    reason: str
    message: str

    def as_result(self) -> dict[str, Any]:
        """The ``Result`` object ``crossplane render --include-function-results`` prints."""
        return {
            "apiVersion": RENDER_API_VERSION,
            "kind": "Result",
            "severity": self.type,
            "reason": self.reason,
            "message": self.message,
        }


def normal(reason: str, message: str) -> Event:
    """A Normal event."""
    return Event("Normal", reason, message)


def warning(reason: str, message: str) -> Event:
    """A Warning event."""
    return Event("Warning", reason, message)
