"""Converged steady states of the example fleets, as compose-model-deployment is asked about them.

Each example fleet is previewed in a healthy world (``--assume-ready``) until it
settles. Every ModelDeployment that runs replicas there is one steady state: the
request Crossplane would send it next (its XR, its composed resources with the
status they report, and the fleet as required resources). Faults are injected
into copies of these requests.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_deployment.fn import FunctionRunner
from modelplane.preview.command import run_preview
from modelplane.preview.manifests import is_modelplane, key_of
from modelplane.repo import ROOT

_EXAMPLES = ROOT / "examples"


def _first_step(scenario: Path) -> Path:
    """A scenario's directory, or its first step's when it is previewed step by step."""
    return scenario / "step-1" if (scenario / "step-1").is_dir() else scenario


_SCHEDULING = sorted(p.name for p in (_EXAMPLES / "scheduling").iterdir() if p.is_dir())
FLEETS: dict[str, tuple[Path, ...]] = {
    "quickstart": (_EXAMPLES / "quickstart",),
    "platform+models": (_EXAMPLES / "platform", _EXAMPLES / "models"),
    **{f"scheduling/{name}": (_first_step(_EXAMPLES / "scheduling" / name),) for name in _SCHEDULING},
}
_RESOURCE_NAME = "crossplane.io/composition-resource-name"
# The required resources compose-model-deployment asks for, by requirement name.
REQUIRED = {
    "clusters": "InferenceCluster",
    "classes": "InferenceClass",
    "replicas": "ModelReplica",
    "quotas": "FleetQuota",
    "priorityclasses": "FleetPriorityClass",
}


@dataclass
class Call:
    """One request to compose-model-deployment, as plain dicts a fault may edit.

    Attributes:
        xr: The observed ModelDeployment.
        observed: Its composed resources by composition key, with the status they report.
        required: The fleet, by requirement name.
    """

    xr: dict[str, Any]
    observed: dict[str, dict[str, Any]]
    required: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def copy(self) -> Call:
        return copy.deepcopy(self)

    def request(self) -> fnv1.RunFunctionRequest:
        req = fnv1.RunFunctionRequest(
            observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(self.xr)))
        )
        for key, body in self.observed.items():
            req.observed.resources[key].resource.update(body)
        for name, items in self.required.items():
            req.required_resources[name].SetInParent()
            for item in items:
                req.required_resources[name].items.add().resource.update(item)
        return req

    def run(self, now: datetime | None = None) -> dict[str, Any]:
        """Answer the request with a fresh runner (its clock at ``now`` when given); the response as a dict."""
        runner = FunctionRunner() if now is None else FunctionRunner(clock=lambda: now)
        rsp = asyncio.run(runner.RunFunction(self.request(), None))
        got: dict[str, Any] = json_format.MessageToDict(rsp)
        return got


@dataclass(frozen=True)
class Steady:
    """One ModelDeployment of a settled fleet."""

    fleet: str
    name: str
    call: Call

    @property
    def id(self) -> str:
        return f"{self.fleet}/{self.name}"


@functools.cache
def steady_states(fleet: str) -> tuple[Steady, ...]:
    """Every ModelDeployment of ``fleet`` that runs replicas once the fleet settles, by name."""
    states = run_preview(list(FLEETS[fleet]), assume_ready=True).fleet.states
    required = {name: [s.xr for k, s in sorted(states.items()) if k[0] == kind] for name, kind in REQUIRED.items()}
    out = []
    for key, state in sorted(states.items()):
        if key[0] != "ModelDeployment":
            continue
        observed = {}
        for composed in state.composed:
            name = composed.get("metadata", {}).get("annotations", {}).get(_RESOURCE_NAME, "")
            child = states.get(key_of(composed)) if is_modelplane(composed) else None
            observed[name] = child.xr if child is not None else composed
        if any(k.startswith("replica-") for k in observed):
            out.append(Steady(fleet, key[2], Call(state.xr, observed, required)))
    return tuple(copy.deepcopy(out))
