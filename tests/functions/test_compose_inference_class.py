"""compose-inference-class: validation becomes conditions, the accelerator becomes status."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_inference_class.fn import FunctionRunner

H100: dict[str, Any] = {
    "name": "gpu",
    "driver": "gpu.nvidia.com",
    "deviceClassName": "gpu.nvidia.com",
    "count": 8,
    "attributes": {
        "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "cudaComputeCapability": {"version": "9.0.0"},
    },
    "capacity": {"memory": {"value": "80Gi"}},
}
IB: dict[str, Any] = {"name": "ib", "driver": "ib.nvidia.com", "claim": "Synthetic", "count": 8}


def _class(
    *, devices: list[dict[str, Any]] | None = None, provisioning: dict[str, Any] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"devices": [H100] if devices is None else devices}
    if provisioning is not None:
        spec["provisioning"] = provisioning
    return {"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "c"}, "spec": spec}


def _req(xr: dict[str, Any]) -> fnv1.RunFunctionRequest:
    return fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )


def _want(*, status: dict[str, Any] | None, valid: bool, message: str) -> dict[str, Any]:
    composite: dict[str, Any] = {
        "ready": "READY_TRUE" if valid else "READY_FALSE",
        "resource": {"status": {**(status or {}), "readyVerdict": valid}},
    }
    want: dict[str, Any] = {
        "meta": {"tag": "t", "ttl": "60s"},
        "desired": {"composite": composite},
        "context": {},
        "conditions": [
            {
                "type": "Valid",
                "status": "STATUS_CONDITION_TRUE" if valid else "STATUS_CONDITION_FALSE",
                "reason": "Valid" if valid else "InvalidSpec",
                "message": message,
            }
        ],
    }
    if not valid:
        want["results"] = [{"severity": "SEVERITY_WARNING", "message": f"InferenceClass is invalid: {message}"}]
    return want


H100_STATUS: dict[str, Any] = {
    "summary": "8x gpu.nvidia.com (NVIDIA H100 80GB HBM3, 80Gi)",
    "accelerator": {
        "device": "gpu",
        "driver": "gpu.nvidia.com",
        "countPerNode": 8,
        "memory": "80Gi",
        "productName": "NVIDIA H100 80GB HBM3",
    },
}
GKE: dict[str, Any] = {
    "provider": "GKE",
    "gke": {"machineType": "a3-highgpu-8g", "accelerator": {"type": "nvidia-h100-80gb", "count": 8}},
}


@dataclass(frozen=True)
class Case:
    xr: dict[str, Any]
    want: dict[str, Any]


CASES = [
    pytest.param(Case(_class(), _want(status=H100_STATUS, valid=True, message="the class is valid")), id="valid-byo"),
    pytest.param(
        Case(
            _class(devices=[H100, IB], provisioning=GKE),
            _want(
                status={**H100_STATUS, "summary": H100_STATUS["summary"] + " + 8x ib.nvidia.com (Synthetic)"},
                valid=True,
                message="the class is valid",
            ),
        ),
        id="valid-gke-with-synthetic-nic",
    ),
    pytest.param(
        Case(
            _class(devices=[{k: v for k, v in H100.items() if k != "deviceClassName"}]),
            _want(
                status=H100_STATUS,
                valid=False,
                message="spec.devices[0].deviceClassName: required when claim is DRA",
            ),
        ),
        id="dra-without-device-class",
    ),
    pytest.param(
        Case(
            _class(devices=[IB]),
            _want(
                status={"summary": "8x ib.nvidia.com (Synthetic)"},
                valid=False,
                message="spec.devices: at least one device must have claim DRA (the accelerator)",
            ),
        ),
        id="no-accelerator",
    ),
    pytest.param(
        Case(
            _class(provisioning={"provider": "EKS", "gke": GKE["gke"]}),
            _want(
                status=H100_STATUS,
                valid=False,
                message="spec.provisioning.gke: not allowed when provisioning.provider is EKS; "
                "spec.provisioning.eks: required when provisioning.provider is EKS",
            ),
        ),
        id="provisioning-block-mismatch",
    ),
    pytest.param(
        Case(
            _class(provisioning={"provider": "GKE", "gke": {**GKE["gke"], "accelerator": {"type": "x", "count": 4}}}),
            _want(
                status=H100_STATUS,
                valid=False,
                message="spec.provisioning.gke.accelerator.count: 4 GPUs per node matches no DRA device's count "
                "in spec.devices",
            ),
        ),
        id="gke-accelerator-count-mismatch",
    ),
    pytest.param(
        Case(
            _class(
                devices=[
                    {
                        **H100,
                        "attributes": {"cc": {"version": "9.0"}, "two": {"string": "a", "int": 1}},
                        "capacity": {},
                    }
                ]
            ),
            _want(
                status={
                    "summary": "8x gpu.nvidia.com",
                    "accelerator": {"device": "gpu", "driver": "gpu.nvidia.com", "countPerNode": 8},
                },
                valid=False,
                message="spec.devices[0].attributes.cc.version: '9.0' is not a semantic version like 9.0.0; "
                "spec.devices[0].attributes.two: must set exactly one of string, int, bool or version",
            ),
        ),
        id="bad-attributes",
    ),
    pytest.param(
        Case(
            _class(devices=[{**H100, "capacity": {"memory": {"value": "80 GiB"}}}]),
            _want(
                status=None,
                valid=False,
                message="spec.devices[0].capacity.memory.value: Input should be a valid integer, unable to parse "
                "string as an integer or String should match pattern "
                "'^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?"
                "(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'",
            ),
        ),
        id="bad-quantity-names-field",
    ),
    pytest.param(
        Case(
            _class(devices=[H100, {**H100, "count": 4}]),
            _want(
                status={
                    **H100_STATUS,
                    "summary": H100_STATUS["summary"] + " + 4x gpu.nvidia.com (NVIDIA H100 80GB HBM3, 80Gi)",
                },
                valid=False,
                message="spec.devices: device name 'gpu' is used 2 times",
            ),
        ),
        id="duplicate-device-names",
    ),
    pytest.param(
        Case(
            _class(devices=[{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}]),
            _want(status=None, valid=False, message="spec.devices[0].count: Field required"),
        ),
        id="schema-violation-names-field",
    ),
    pytest.param(
        Case(
            {"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "c"}},
            _want(status=None, valid=False, message="spec: required"),
        ),
        id="no-spec",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_run_function(case: Case) -> None:
    rsp = asyncio.run(FunctionRunner().RunFunction(_req(case.xr), None))
    assert json_format.MessageToDict(rsp) == case.want
