"""tools/images/requirements.lock pins what pyproject.toml asks for, so images change only when the lock does."""

from __future__ import annotations

import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.images.locks import LOCKS, read_lock

PYPROJECT = tomllib.loads((LOCKS.parents[1] / "pyproject.toml").read_text())
RUNTIME = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]


@pytest.mark.parametrize("requirement", [pytest.param(r, id=r.name) for r in RUNTIME])
def test_every_runtime_dependency_is_pinned_within_its_range(requirement: Requirement) -> None:
    pins = read_lock("requirements.lock")
    name = canonicalize_name(requirement.name)
    assert name in pins, f"{name} is not in requirements.lock: run python tools/images/lock.py"
    assert requirement.specifier.contains(pins[name], prereleases=True), (
        f"requirements.lock pins {name}=={pins[name]}, outside {requirement}: run python tools/images/lock.py"
    )


def test_no_dev_tool_is_pinned() -> None:
    # pip installs the image's /venv from its own wheel (pip.lock) and is not left in it; no dev extra goes in.
    dev = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["optional-dependencies"]["dev"]}
    pins = read_lock("requirements.lock")
    assert dev & set(pins) <= {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["dependencies"]}
    assert "pip" not in pins
    assert set(read_lock("pip.lock")) == {"pip"}
