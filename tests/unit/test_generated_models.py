"""The checked-in JSON schemas and pydantic models match what apis/ generates."""

from __future__ import annotations

import subprocess
import sys

import pytest

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


def _fresh_interpreter(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)


@pytest.mark.parametrize("kind", [k.kind for k in KINDS], ids=[k.kind for k in KINDS])
def test_the_package_hands_out_each_model_of_its_module(kind: str) -> None:
    import modelplane_models  # noqa: PLC0415 - as above

    model = getattr(modelplane_models, kind)
    assert model.__name__ == kind
    assert sys.modules[model.__module__].__dict__[kind] is model


def test_an_unknown_name_is_an_attribute_error() -> None:
    import modelplane_models  # noqa: PLC0415 - as above

    with pytest.raises(AttributeError, match="has no attribute 'ModelDeploymentz'"):
        _ = modelplane_models.ModelDeploymentz


def test_importing_one_model_builds_no_other() -> None:
    # A function reads a few models: importing the package through one of them builds no other (start-up).
    proc = _fresh_interpreter(
        "import sys; import modelplane_models.model_pool; "
        "print(sorted(m for m in sys.modules if m.startswith('modelplane_models.')))"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['modelplane_models.model_pool']"
