"""A refused manifest worded as ``kubectl apply`` prints it, with a did-you-mean for a misspelt field.

Unknown fields fail at decoding, before validation, so the API server answers
400 BadRequest naming only them (``strict decoding error: unknown field
"spec.replcias"``); any other failure is 422 Invalid with every cause, which
kubectl prints as ``The ModelDeployment "x" is invalid: ...`` (one cause on
the line, several as a ``*`` list).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from modelplane.admission.documents import JSON
from modelplane.admission.validator import Result

_UNKNOWN = re.compile(r'^(?P<field>\S+): unknown field "(?P=field)"$')
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

FieldsAt = Callable[[Sequence[str | int]], list[str]]
"""The fields a schema declares at a path (``Validator.fields_at``)."""


@dataclass(frozen=True)
class Refusal:
    """Why the API server would refuse one manifest.

    Attributes:
        message: What kubectl prints, possibly over several lines.
        hints: Did-you-mean lines for misspelt fields (not kubectl's; ours).
    """

    message: str
    hints: tuple[str, ...] = ()


def _parts(path: str) -> list[str | int]:
    return [int(index) if index else name for name, index in _PART.findall(path)]


def did_you_mean(path: str, fields_at: FieldsAt) -> str | None:
    """The declared sibling of the unknown field ``path`` closest to it, as a full path; None if none is near."""
    parts = _parts(path)
    if not parts or not isinstance(parts[-1], str):
        return None
    near = difflib.get_close_matches(parts[-1], fields_at(parts[:-1]), n=1, cutoff=0.75)
    if not near:
        return None
    return path[: len(path) - len(parts[-1])] + near[0]


def refusal(manifest: JSON, result: Result, source: str, fields_at: FieldsAt | None = None) -> Refusal | None:
    """What kubectl prints when the API server refuses ``manifest`` (read from ``source``); None if admitted.

    Args:
        manifest: The manifest as written.
        result: Its admission result.
        source: The file it came from, as kubectl names it.
        fields_at: The schema's fields at a path, to suggest a near field for an unknown one.
    """
    if result.ok:
        return None
    kind = str(manifest.get("kind", "")) if isinstance(manifest, dict) else ""
    meta = manifest.get("metadata") if isinstance(manifest, dict) else None
    name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
    if not result.schema_found:
        version = str(manifest.get("apiVersion", "")) if isinstance(manifest, dict) else ""
        return Refusal(
            f'error: resource mapping not found for name: "{name}" from "{source}": '
            f'no matches for kind "{kind}" in version "{version}"'
        )
    unknown = [m.group("field") for e in result.errors if (m := _UNKNOWN.match(e))]
    if unknown:
        version = str(manifest.get("apiVersion", "")).rpartition("/")[2]
        fields = ", ".join(f'unknown field "{f}"' for f in unknown)
        hints = []
        for f in unknown:
            near = did_you_mean(f, fields_at) if fields_at is not None else None
            if near is not None:
                hints.append(f"{f}: did you mean {near}?")
        return Refusal(
            f'Error from server (BadRequest): error when creating "{source}": {kind} in version "{version}" '
            f"cannot be handled as a {kind}: strict decoding error: {fields}",
            tuple(hints),
        )
    head = f'The {kind} "{name}" is invalid: '
    if len(result.errors) == 1:
        return Refusal(head + result.errors[0])
    return Refusal(head + "".join(f"\n* {e}" for e in result.errors))
