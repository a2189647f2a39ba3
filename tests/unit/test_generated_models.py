"""The checked-in JSON schemas and pydantic models match what apis/ generates."""

from __future__ import annotations

import subprocess
import sys

from modelplane.kinds import KINDS
from modelplane.repo import ROOT


def test_models_have_not_drifted_from_xrds() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "schemas" / "generate.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_kind_has_a_model() -> None:
    import modelplane_models  # noqa: PLC0415 - imported here so a broken package fails only this test

    assert sorted(modelplane_models.__all__) == sorted(k.kind for k in KINDS)
