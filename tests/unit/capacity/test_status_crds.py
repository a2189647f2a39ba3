"""The scheduler status objects the adapter tests read validate against the real KAI and Kueue CRDs."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conformance.cli import require_binary, require_crds, resource_validate
from tests.conformance.schemas import extensions

STATUS = Path(__file__).parent / "status"


def test_status_objects_validate(tmp_path: Path) -> None:
    binary = require_binary()
    require_crds()
    docs = [d for p in sorted(STATUS.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
    verdicts = resource_validate(binary, extensions(docs, tmp_path / "schemas"), docs, tmp_path / "run")
    assert [f"{v.gvk} {v.name}: {v.errors}" for v in verdicts if not v.ok] == []
    assert len(verdicts) == len(docs)
