"""compose-model-deployment as a scale target: what an autoscaler reads (status.selector), and scale to zero."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functions.test_compose_model_deployment import Fleet, _replica_resource, _run, _scheduled, _xr

SELECTOR = "modelplane.ai/deployment=llm"


def _invalid() -> dict[str, Any]:
    xr = _xr()
    xr["spec"]["workers"]["topology"] = {"tensor": 0}
    return xr


@pytest.mark.parametrize(
    ("xr", "fleet"),
    [
        pytest.param(_xr(), Fleet(), id="scheduled"),
        pytest.param(_xr(), Fleet(fetched=False), id="waiting-for-the-fleet"),
        pytest.param(_invalid(), Fleet(), id="invalid-spec"),
        pytest.param(_xr(replicas=0), Fleet(), id="scaled-to-zero"),
    ],
)
def test_status_selector_is_written_on_every_call(xr: dict[str, Any], fleet: Fleet) -> None:
    # HPA and KEDA refuse a scale target without status.selector (the XRD's labelSelectorPath).
    status = _run(xr, fleet)["desired"]["composite"]["resource"]["status"]
    assert status["selector"] == SELECTOR


def test_the_selector_survives_the_full_status() -> None:
    status = _run(_xr(), Fleet())["desired"]["composite"]["resource"]["status"]
    assert (status["selector"], status["replicas"], len(status["placements"])) == (SELECTOR, 2, 2)


@pytest.mark.parametrize(
    "observed",
    [
        pytest.param({}, id="nothing-ran"),
        pytest.param(
            {
                "replica-0": _replica_resource("llm-0", "east", ready=True),
                "replica-1": _replica_resource("llm-1", "west", ready=True),
            },
            id="every-replica-removed",
        ),
    ],
)
def test_scaled_to_zero_says_why(observed: dict[str, dict[str, Any]]) -> None:
    got = _run(_xr(replicas=0), Fleet(replicas=tuple(observed.values()), observed=observed))
    assert _scheduled(got) == {
        "type": "Scheduled",
        "status": "STATUS_CONDITION_TRUE",
        "reason": "ScaledToZero",
        "message": (
            "scaled to zero: spec.replicas is 0; no replica serves and the ModelServices routing to this "
            "deployment answer 503 until spec.replicas is raised (kubectl scale, or an autoscaler through the "
            "scale subresource)"
        ),
    }
    assert "resources" not in got["desired"]
    status = got["desired"]["composite"]["resource"]["status"]
    assert (status["replicas"], status["readyReplicas"]) == (0, 0)
    # Zero asked for, zero running: what was asked for is done.
    assert got["desired"]["composite"]["ready"] == "READY_TRUE"


def test_one_replica_is_not_scaled_to_zero() -> None:
    assert _scheduled(_run(_xr(replicas=1), Fleet()))["reason"] == "Scheduled"
