"""Where the checked-out project's files are (apis/, examples/), for the dev-side commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modelplane.documents import load_one
from modelplane.kinds import BY_KIND

# lib/modelplane/repo.py -> the repository root.
ROOT = Path(__file__).resolve().parents[2]
APIS = ROOT / "apis"


class CompositionNotFoundError(LookupError):
    """No Composition ships for a kind."""


def composition_path(kind: str) -> Path:
    """Return the path of the Composition that ships for ``kind``."""
    info = BY_KIND.get(kind)
    if info is None:
        msg = f"{kind!r} is not a Modelplane kind (known: {', '.join(sorted(BY_KIND))})"
        raise CompositionNotFoundError(msg)
    path = APIS / info.plural / "composition.yaml"
    if not path.is_file():
        msg = f"no Composition for {kind} at {path}"
        raise CompositionNotFoundError(msg)
    return path


def load_composition(kind: str) -> dict[str, Any]:
    """Load the Composition that ships for ``kind``."""
    return load_one(composition_path(kind).read_text(encoding="utf-8"))
