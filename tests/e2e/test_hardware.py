"""The simulated GPU nodes, without an API server (under `make test`, not `make e2e`).

The nodes and ResourceSlices must carry exactly what the platform declares:
the pool label, and per node ``count`` devices of each DRA device of the class
with its attributes and capacity; the DeviceClass must select the driver.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.cel import Device, compile_selector
from modelplane.names import POOL_LABEL
from tests.e2e.hardware import device_classes, node, pools, resource_slices
from tests.e2e.placement import Allocated, Placement, matches, problems

L4: dict[str, Any] = {
    "metadata": {"name": "l4"},
    "spec": {
        "devices": [
            {
                "name": "gpu",
                "driver": "gpu.nvidia.com",
                "claim": "DRA",
                "deviceClassName": "gpu.nvidia.com",
                "count": 2,
                "attributes": {"productName": {"string": "NVIDIA L4"}, "driverVersion": {"version": "570.1.0"}},
                "capacity": {"memory": {"value": "24Gi"}},
            },
            {"name": "nic", "driver": "nic.example.com", "claim": "Synthetic", "count": 1},
        ]
    },
}
CEL = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'


def _node() -> dict[str, Any]:
    n = node("c", "l4", 0)
    n["metadata"]["uid"] = "n-uid"
    return n


def test_a_node_is_labelled_with_its_pool() -> None:
    n = node("c", "l4", 1)
    assert n["metadata"]["name"] == "c-l4-1"
    assert n["metadata"]["labels"][POOL_LABEL] == "l4"


def test_a_slice_publishes_the_class_devices_exactly() -> None:
    (s,) = resource_slices(_node(), L4)
    assert s["spec"]["driver"] == "gpu.nvidia.com"
    assert s["spec"]["nodeName"] == "c-l4-0"
    assert s["metadata"]["ownerReferences"][0]["uid"] == "n-uid"
    assert [d["name"] for d in s["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    for d in s["spec"]["devices"]:
        assert d["attributes"] == L4["spec"]["devices"][0]["attributes"]
        assert d["capacity"] == {"memory": {"value": "24Gi"}}


def test_the_device_class_selects_the_driver() -> None:
    (klass,) = device_classes([L4])
    assert klass["metadata"]["name"] == "gpu.nvidia.com"
    (selector,) = klass["spec"]["selectors"]
    assert compile_selector(selector["cel"]["expression"]).matches(Device("gpu.nvidia.com"))
    assert not compile_selector(selector["cel"]["expression"]).matches(Device("nic.example.com"))


def test_pools_of_a_cluster() -> None:
    cluster = {"spec": {"nodePools": [{"name": "l4", "className": "l4", "nodeCount": 2}]}}
    assert pools(cluster) == [("l4", "l4", 2)]


def _gpu(node_name: str, i: int, product: str = "NVIDIA L4") -> Allocated:
    return Allocated("gpu", f"gpu-{i}", node_name, "gpu.nvidia.com", {"productName": {"string": product}}, {})


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        pytest.param([Placement("p", "", "n1", "l4", "c", (_gpu("n1", 0),))], [], id="as-composed"),
        pytest.param([Placement("p", "", "n1", "a100", "c", (_gpu("n1", 0),))], ["pool 'a100'"], id="wrong-pool"),
        pytest.param([Placement("p", "", "", "", "", ())], ["not bound"], id="unbound"),
        pytest.param(
            [Placement("p", "", "n1", "l4", "c", (_gpu("n1", 0), _gpu("n1", 1)))], ["2 devices"], id="gpu-count"
        ),
        pytest.param(
            [Placement("p", "", "n1", "l4", "c", (_gpu("n1", 0, "NVIDIA H100"),))], ["does not match"], id="cel"
        ),
        pytest.param(
            [
                Placement("p0", "w/0", "n1", "l4", "c", (_gpu("n1", 0),)),
                Placement("p1", "w/0", "n1", "l4", "c", (_gpu("n1", 1),)),
            ],
            ["distinct nodes"],
            id="group-on-one-node",
        ),
    ],
)
def test_problems_name_each_disagreement(found: list[Placement], expected: list[str]) -> None:
    nodes_per_worker = 2 if any(p.group for p in found) else 1
    got = problems(found, pool="l4", pods=len(found), gpus_per_node=1, nodes_per_worker=nodes_per_worker, cel=CEL)
    assert len(got) == len(expected), got
    for message, part in zip(got, expected, strict=True):
        assert part in message, got


def test_a_device_matches_the_selector_by_its_published_attributes() -> None:
    assert matches(CEL, _gpu("n", 0))
    assert not matches(CEL, _gpu("n", 0, "NVIDIA A100"))
