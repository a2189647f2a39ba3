from __future__ import annotations

from collections import Counter

import pytest

from modelplane.scheduling import ClassDevice, DeviceVersion, PoolReason
from modelplane.scheduling.devices import ClassJudge, ClassView, DeviceRequest, RoleRequest, class_view
from modelplane.topology import Footprint, Role
from modelplane_models.inference_class import InferenceClass
from tests.unit.fleet import HOPPER, IB, fake_matcher, gpu_class

CLASSES = [
    gpu_class("h100", per_node=8, ib=8),
    gpu_class("l4", per_node=1, arch="Ada"),
    gpu_class("nic-only-hopper", per_node=8, arch="Ampere", dra_nic=True),
    InferenceClass.model_validate(
        {
            "metadata": {"name": "broken"},
            "spec": {"devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "count": 8}]},
        }
    ),
]


def views() -> dict[str, ClassView]:
    return {v.name: v for v in map(class_view, CLASSES) if v is not None}


def request(cel: str = HOPPER, *, gpus: int = 1, devices: tuple[DeviceRequest, ...] = ()) -> RoleRequest:
    return RoleRequest(Role.UNIFIED, "spec.nodeSelector", cel, devices, Footprint(1, gpus, 1))


@pytest.mark.parametrize(
    ("req", "class_name", "reason", "message"),
    [
        pytest.param(request(), "h100", None, "", id="fits"),
        pytest.param(request(), "l4", PoolReason.SELECTOR_MISMATCH, "spec.nodeSelector.cel matches no DRA", id="cel"),
        pytest.param(request(), "missing", PoolReason.CLASS_NOT_FOUND, "InferenceClass missing not found", id="gone"),
        pytest.param(request(), "broken", PoolReason.INVALID_CLASS, "deviceClassName: required", id="invalid"),
        pytest.param(request(gpus=16), "h100", PoolReason.TOPOLOGY_EXCEEDS_NODE, "needs 16 GPUs", id="topology"),
        pytest.param(request("boom"), "h100", PoolReason.CEL_ERROR, "no such key: boom (in 'boom')", id="cel-error"),
        pytest.param(
            request(devices=(DeviceRequest("ib", IB, 8),)), "h100", None, "", id="synthetic-device-requirement"
        ),
        pytest.param(
            request(devices=(DeviceRequest("ib", IB, 9),)),
            "h100",
            PoolReason.DEVICES_MISSING,
            "spec.nodeSelector.devices[0] (ib) needs 9 per node; ib has 8",
            id="too-few-devices",
        ),
        pytest.param(
            request("true", devices=(DeviceRequest("ib", IB, 1),)),
            "l4",
            PoolReason.DEVICES_MISSING,
            "spec.nodeSelector.devices[0] (ib) matches no device of l4",
            id="device-missing",
        ),
        pytest.param(
            request(devices=(DeviceRequest("ib", "boom", 1),)),
            "h100",
            PoolReason.CEL_ERROR,
            "spec.nodeSelector.devices[0]: no such key: boom",
            id="device-cel-error",
        ),
        pytest.param(
            request('device.attributes["nic.example.com"].architecture == "Hopper"'),
            "nic-only-hopper",
            None,
            "",
            id="any-dra-device-kind-matches",
        ),
    ],
)
def test_class_fit(req: RoleRequest, class_name: str, reason: PoolReason | None, message: str) -> None:
    got = ClassJudge(fake_matcher, views()).fit(req, class_name)
    assert got.misfit == reason
    assert message in got.message


def test_synthetic_devices_never_satisfy_the_accelerator_selector() -> None:
    judge = ClassJudge(fake_matcher, views())
    assert judge.fit(request(IB), "h100").misfit is PoolReason.SELECTOR_MISMATCH


def test_each_expression_is_evaluated_once_per_class_device() -> None:
    calls: Counter[tuple[str, str]] = Counter()

    def counting(expression: str, device: ClassDevice) -> bool:
        calls[expression, device.name] += 1
        return fake_matcher(expression, device)

    judge = ClassJudge(counting, views())
    prefill = request(devices=(DeviceRequest("ib", IB, 1),))
    decode = RoleRequest(Role.DECODE, "spec.decode.nodeSelector", HOPPER, (), Footprint(1, 2, 1))
    for _ in range(3):
        for name in ("h100", "l4"):
            judge.fit(prefill, name)
            judge.fit(decode, name)
    assert max(calls.values()) == 2  # once per class: h100 and l4 each have a "gpu" device
    assert calls[HOPPER, "gpu"] == 2
    assert calls[IB, "ib"] == 1


def test_class_view_reads_typed_attributes() -> None:
    view = class_view(gpu_class("h100", per_node=8))
    assert view is not None
    assert view.accelerator_per_node == 8
    assert view.devices[0] == ClassDevice(
        name="gpu",
        driver="gpu.nvidia.com",
        claim=view.devices[0].claim,
        count=8,
        attributes={"architecture": "Hopper", "cudaComputeCapability": DeviceVersion("9.0.0")},
        capacity={"memory": "80Gi"},
    )
