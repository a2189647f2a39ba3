"""The errors of the CEL device-selector environment."""

from __future__ import annotations


class CELError(Exception):
    """A CEL selector could not be compiled or evaluated.

    Attributes:
        expression: The selector's source text.
        reason: Why, without the expression.

    """

    def __init__(self, expression: str, reason: str) -> None:
        """Record the expression and the reason; the message names both."""
        self.expression = expression
        self.reason = reason
        super().__init__(f"{_shorten(expression)}: {reason}")


class CELCompileError(CELError):
    """The selector is not valid in the DRA environment (syntax, types, result, size or cost).

    Attributes:
        offset: Where the compiler stopped (0-based characters into the expression), when it says.
        detail: The compiler's message without the offset, e.g. ``syntax error: expected an expression,
            found end of input``.

    """

    def __init__(self, expression: str, reason: str, *, offset: int | None = None, detail: str = "") -> None:
        """Record the expression, the reason, and where and why apart."""
        super().__init__(expression, reason)
        self.offset = offset
        self.detail = detail or reason


class CELEvaluationError(CELError):
    """The selector failed on one device, e.g. ``no such key: architecture``."""


def _shorten(expression: str, limit: int = 200) -> str:
    text = " ".join(expression.split())
    return f"CEL {text!r}" if len(text) <= limit else f"CEL {text[:limit]!r}..."
