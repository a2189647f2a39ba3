"""The KAI and Kueue adapters on realistic status objects (which validate against the real CRDs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.capacity.observed import Observed, Source
from modelplane.capacity.snapshot import Figure, Snapshot, gpus, pool_observations
from modelplane.names import POOL_LABEL
from modelplane.schedulers import SCHEDULERS

STATUS = Path(__file__).parent / "status"


def scheduler_snapshot(
    scheduler: str, objects: list[dict[str, Any]], device_classes: tuple[str, ...] | list[str] = ()
) -> Snapshot | None:
    read = SCHEDULERS[scheduler].snapshot
    return read(objects, device_classes) if read is not None else None


def _objects(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((STATUS / f"{name}.yaml").read_text()) if d]


def _without_status(name: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in o.items() if k != "status"} for o in _objects(name)]


@pytest.mark.parametrize(
    ("scheduler", "objects", "want"),
    [
        pytest.param(
            "KAI",
            _objects("kai-queue-busy"),
            Snapshot(Source.KAI, ("Queue inference",), (Figure("nvidia.com/gpu", 12, 32),)),
            id="kai-busy",
        ),
        pytest.param(
            "KAI",
            _objects("kai-queue-overcommitted"),
            Snapshot(Source.KAI, ("Queue inference",), (Figure("nvidia.com/gpu", 40, 32),)),
            id="kai-overcommitted",
        ),
        pytest.param(
            "KAI",
            _objects("kai-queue-empty"),
            Snapshot(Source.KAI, ("Queue inference",), (Figure("nvidia.com/gpu", 0, None),)),
            id="kai-empty",
        ),
        pytest.param(
            "KAI",
            _without_status("kai-queue-busy"),
            Snapshot(Source.KAI, ("Queue inference",), missing="the KAI Queue inference reports no status yet"),
            id="kai-no-status",
        ),
        pytest.param(
            "KAI",
            [],
            Snapshot(Source.KAI, (), missing="the KAI Queue has not been observed yet"),
            id="kai-not-observed",
        ),
        pytest.param(
            "Kueue",
            _objects("kueue-clusterqueue-busy"),
            Snapshot(
                Source.KUEUE,
                ("ClusterQueue inference", "ResourceFlavor h100", "ResourceFlavor l4"),
                (Figure("nvidia.com/gpu", 16, 16, "h100", "h100"), Figure("nvidia.com/gpu", 3, 8, "l4", "l4")),
            ),
            id="kueue-busy",
        ),
        pytest.param(
            "Kueue",
            _objects("kueue-clusterqueue-overcommitted"),
            Snapshot(Source.KUEUE, ("ClusterQueue inference",), (Figure("nvidia.com/gpu", 24, 16, "default-flavor"),)),
            id="kueue-overcommitted",
        ),
        pytest.param(
            "Kueue",
            _objects("kueue-clusterqueue-empty"),
            Snapshot(Source.KUEUE, ("ClusterQueue inference",), (Figure("nvidia.com/gpu", 0, 16, "default-flavor"),)),
            id="kueue-empty",
        ),
        pytest.param(
            "Kueue",
            _without_status("kueue-clusterqueue-empty"),
            Snapshot(
                Source.KUEUE,
                ("ClusterQueue inference",),
                missing="the Kueue ClusterQueue inference reports no status yet",
            ),
            id="kueue-no-status",
        ),
    ],
)
def test_snapshot(scheduler: str, objects: list[dict[str, Any]], want: Snapshot) -> None:
    assert scheduler_snapshot(scheduler, objects) == want


def test_no_adapter_for_the_default_scheduler() -> None:
    assert scheduler_snapshot("None", _objects("kai-queue-busy")) is None
    assert {k for k, row in SCHEDULERS.items() if row.snapshot is not None} == {"KAI", "Kueue"}


def test_dra_device_classes_count_as_gpus() -> None:
    queue = {**_objects("kai-queue-empty")[0], "status": {"allocated": {"gpu.nvidia.com": "4", "cpu": "8"}}}
    snapshot = scheduler_snapshot("KAI", [queue], ["gpu.nvidia.com"])
    assert snapshot is not None
    assert snapshot.in_use == 4


@pytest.mark.parametrize(
    ("name", "scheduler", "pools", "want", "unassigned"),
    [
        pytest.param("kai-queue-busy", "KAI", ["h100"], {"h100": Observed(Source.KAI, 12)}, 0, id="kai-one-pool"),
        pytest.param("kai-queue-empty", "KAI", ["h100"], {"h100": Observed(Source.KAI, 0)}, 0, id="kai-empty"),
        # One queue for two pools: which pool the GPUs are on is unknown, so both stay declared.
        pytest.param("kai-queue-busy", "KAI", ["h100", "l4"], {}, 12, id="kai-two-pools"),
        pytest.param(
            "kueue-clusterqueue-busy",
            "Kueue",
            ["h100", "l4"],
            {"h100": Observed(Source.KUEUE, 16), "l4": Observed(Source.KUEUE, 3)},
            0,
            id="kueue-flavor-per-pool",
        ),
        pytest.param(
            "kueue-clusterqueue-overcommitted",
            "Kueue",
            ["h100"],
            {"h100": Observed(Source.KUEUE, 24)},
            0,
            id="kueue-overcommitted-one-pool",
        ),
    ],
)
def test_pool_observations(
    name: str, scheduler: str, pools: list[str], want: dict[str, Observed], unassigned: int
) -> None:
    snapshot = scheduler_snapshot(scheduler, _objects(name))
    assert snapshot is not None
    got = pool_observations(snapshot, pools)
    assert (dict(got.pools), got.unassigned) == (want, unassigned)


def test_an_unknown_snapshot_observes_nothing() -> None:
    snapshot = scheduler_snapshot("KAI", [])
    assert snapshot is not None
    assert pool_observations(snapshot, ["h100"]).pools == {}


@pytest.mark.parametrize(("value", "want"), [("12", 12), (3, 3), ("1500m", 2), ("1k", 1000), ("bad", 0)])
def test_gpus(value: object, want: int) -> None:
    assert gpus(value) == want


def test_flavor_pool_label_is_the_pool_label() -> None:
    flavor = next(o for o in _objects("kueue-clusterqueue-busy") if o["kind"] == "ResourceFlavor")
    assert POOL_LABEL in flavor["spec"]["nodeLabels"]
