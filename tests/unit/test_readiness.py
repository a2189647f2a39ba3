"""One meaning of Ready, read alike from a dict, a generated model and a protobuf Struct."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function import resource

from modelplane.fnkit.structs import UnclearError, readiness_at
from modelplane.readiness import Readiness, entry_of, readiness, readiness_of
from modelplane_models.model_replica import ModelReplica

READY = {"type": "Ready", "status": "True", "reason": "Available"}
NOT_READY = {"type": "Ready", "status": "False", "reason": "Unavailable", "message": "down", "lastTransitionTime": "t"}
SYNCED = {"type": "Synced", "status": "True"}


def _obj(*conditions: dict[str, Any], generation: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "r"} if generation is None else {"name": "r", "generation": generation}
    return {"metadata": meta, "status": {"conditions": list(conditions)}}


CASES = [
    pytest.param(_obj(READY), Readiness("True", found=True, reason="Available"), id="ready"),
    pytest.param(
        _obj(SYNCED, NOT_READY),
        Readiness("False", found=True, reason="Unavailable", message="down", since="t"),
        id="not-ready-after-another-type",
    ),
    pytest.param(_obj(SYNCED), Readiness(), id="no-ready-condition"),
    pytest.param({"metadata": {"name": "r"}}, Readiness(), id="no-status"),
    pytest.param(_obj(READY, NOT_READY), Readiness("Unknown", found=True, reason="Available"), id="entries-disagree"),
    pytest.param(_obj(READY, READY), Readiness("True", found=True, reason="Available"), id="entries-agree"),
    pytest.param(
        _obj({**READY, "observedGeneration": 1}, generation=2),
        Readiness("True", found=True, current=False, reason="Available"),
        id="observed-for-an-older-generation",
    ),
    pytest.param(
        _obj({**READY, "observedGeneration": 2}, generation=2),
        Readiness("True", found=True, reason="Available"),
        id="observed-for-this-generation",
    ),
    pytest.param(
        _obj(READY, generation=2), Readiness("True", found=True, reason="Available"), id="no-observed-generation"
    ),
    pytest.param(
        _obj({"type": "Ready", "status": "Unknown"}), Readiness("Unknown", found=True), id="unknown-says-unknown"
    ),
]


def _xr(
    verdict: bool | None, *conditions: dict[str, Any], api_version: str = "modelplane.ai/v1alpha1"
) -> dict[str, Any]:
    """A Modelplane XR whose function published ``verdict`` (None: not at all) beside ``conditions``."""
    obj = {"apiVersion": api_version, **_obj(*conditions)}
    if verdict is not None:
        obj["status"]["readyVerdict"] = verdict
    return obj


# Crossplane core can write an XR's previous conditions back for a moment; the function's verdict, written
# in the same apply, is fresh: it decides, and the condition's details are kept only when they agree.
VERDICT_CASES = [
    pytest.param(_xr(True, NOT_READY), Readiness("True", found=True), id="stale-false-condition-verdict-ready"),
    pytest.param(_xr(False, READY), Readiness("False", found=True), id="stale-true-condition-verdict-not-ready"),
    pytest.param(
        _xr(False, NOT_READY),
        Readiness("False", found=True, reason="Unavailable", message="down", since="t"),
        id="verdict-agrees-details-kept",
    ),
    pytest.param(_xr(True), Readiness("True", found=True), id="verdict-before-any-condition"),
    pytest.param(_xr(None, NOT_READY), CASES[1].values[1], id="no-verdict-the-condition-says"),
    pytest.param(
        _xr(True, NOT_READY, api_version="example.org/v1"),
        Readiness("False", found=True, reason="Unavailable", message="down", since="t"),
        id="another-group-field-of-that-name-not-read",
    ),
]


@pytest.mark.parametrize(("obj", "want"), [*CASES, *VERDICT_CASES])
def test_every_reader_reads_ready_alike(obj: dict[str, Any], want: Readiness) -> None:
    assert readiness_of(obj) == want
    assert readiness_at(resource.dict_to_struct(obj).fields) == want
    assert readiness_at(resource.dict_to_struct(obj).fields, strict=True) == want
    replica = ModelReplica.model_validate(obj)
    conditions = replica.status.conditions or [] if replica.status is not None else []
    generation = replica.metadata.generation if replica.metadata is not None else None
    modelplane = str(obj.get("apiVersion", "")).startswith("modelplane.ai/")
    verdict = replica.status.readyVerdict if replica.status is not None and modelplane else None
    assert readiness([entry_of(c) for c in conditions], generation, verdict=verdict) == want


def test_the_verdict_decides_ready_only() -> None:
    obj = _xr(True, NOT_READY, {"type": "Synced", "status": "False", "reason": "ReconcileError"})
    assert readiness_of(obj, "Synced") == Readiness("False", found=True, reason="ReconcileError")
    assert readiness_at(resource.dict_to_struct(obj).fields, "Synced").status == "False"


@pytest.mark.parametrize(
    ("said", "settled", "why_not"),
    [
        pytest.param(Readiness("True", found=True), True, "", id="true"),
        pytest.param(
            Readiness("False", found=True, reason="R", message="m"), False, "Ready is False (R: m)", id="false"
        ),
        pytest.param(Readiness("True", found=True, current=False), None, "", id="stale-true"),
        pytest.param(Readiness(), None, "no Ready condition yet", id="absent"),
    ],
)
def test_what_a_reading_says(said: Readiness, settled: bool | None, why_not: str) -> None:
    assert said.settled is settled
    assert said.why_not() == why_not


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"status": {"conditions": [{"type": "Ready"}]}}, id="entry-without-status"),
        pytest.param({"status": {"conditions": [READY, 3]}}, id="entry-not-an-object"),
        pytest.param({"status": {"conditions": [{**READY, "observedGeneration": "two"}]}}, id="generation-a-word"),
        pytest.param({"metadata": {"generation": 1.5}, "status": {"conditions": [READY]}}, id="generation-a-fraction"),
        pytest.param(
            {"apiVersion": "modelplane.ai/v1alpha1", "status": {"readyVerdict": [True], "conditions": [READY]}},
            id="verdict-not-a-boolean",
        ),
    ],
)
def test_the_strict_reader_leaves_what_the_model_refuses_to_the_model(obj: dict[str, Any]) -> None:
    with pytest.raises(UnclearError):
        readiness_at(resource.dict_to_struct(obj).fields, strict=True)
    with pytest.raises(ValueError, match="validation error"):
        ModelReplica.model_validate(obj)
