"""The scheduler's reasons become the Scheduled condition's in one place, and every one of them has a match."""

from __future__ import annotations

import pytest

from modelplane.conditions import Reason
from modelplane.deployment.report import condition_reason
from modelplane.scheduling import HoldReason, RejectReason

# A replica's own reason when it has no placement (Cordoned and NotReady only describe single clusters).
_UNPLACED = (
    RejectReason.NO_MATCHING_CLUSTERS,
    RejectReason.NO_MATCHING_POOLS,
    RejectReason.CEL_ERROR,
    RejectReason.INSUFFICIENT_CAPACITY,
)


@pytest.mark.parametrize("reason", [pytest.param(r, id=str(r)) for r in (*HoldReason, *_UNPLACED)])
def test_every_scheduler_reason_is_a_condition_reason(reason: HoldReason | RejectReason) -> None:
    said = condition_reason(reason)
    # The condition says the scheduler's own word (a reason missing from Reason would raise).
    assert isinstance(said, Reason)
    assert said.value == reason.value
