"""Compile the DRA CEL selectors a manifest carries at admission, as the workload cluster will.

The API server stores a ModelDeployment (or ModelReplica) without compiling its CEL: the XRD
declares a string. The expression is compiled later, by the scheduler and by the workload
cluster's API server when the replica's ResourceClaim is created, where an error only shows as
``Scheduled=False``. The preview compiles every one before rendering, so a syntax or type error
is refused with the compiler's message, its line and column, the field and the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from modelplane.admission.openapi import fmt_path, short
from modelplane.cel import CELCompileError, compile_selector

# Every property named ``cel`` in our XRDs is a DRA device selector (tests/preview hold the XRDs to it).
SELECTOR_FIELD = "cel"
HINT = (
    "modelplane preview compiles DRA CEL selectors at admission, as the workload cluster compiles the "
    "replica's ResourceClaim; the API server itself stores them uncompiled"
)


def cel_selectors(manifest: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Every DRA CEL selector under ``spec``: its field path as the API server prints it, and its text."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [(("spec",), manifest.get("spec"))]
    found = []
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == SELECTOR_FIELD and isinstance(value, str):
                    found.append((fmt_path((*path, key)), value))
                else:
                    stack.append(((*path, str(key)), value))
        elif isinstance(node, list):
            stack.extend(((*path, i), item) for i, item in enumerate(node))
    yield from sorted(found)


def located(expression: str, error: CELCompileError) -> str:
    """The compiler's message as Kubernetes prints a CEL compile error: line and column, then the line, marked."""
    if error.offset is None:
        return f"compilation failed: {error.detail}"
    before = expression[: error.offset]
    line = before.count("\n") + 1
    column = error.offset - (before.rfind("\n") + 1) + 1
    text = expression.splitlines()[line - 1] if expression.splitlines() else ""
    return f"compilation failed: ERROR: <input>:{line}:{column}: {error.detail}\n | {text}\n | {'.' * (column - 1)}^"


def compile_errors(manifest: dict[str, Any]) -> list[str]:
    """One API-server-style field error per selector of ``manifest`` that does not compile."""
    errors = []
    for path, expression in cel_selectors(manifest):
        try:
            compile_selector(expression)
        except CELCompileError as err:
            errors.append(f"{path}: Invalid value: {short(expression)}: {located(expression, err)}")
    return errors
