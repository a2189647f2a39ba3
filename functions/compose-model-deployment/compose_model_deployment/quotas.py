"""The FleetQuotas a ModelDeployment answers to, and its priority: three small reads a call.

The deployment reads every FleetQuota and every FleetPriorityClass: a fleet has a few of each.
Each quota publishes the namespaces it selects (``status.namespaces``) and its use per limit
(``status.limits[]``), so the deployment reads neither Namespaces nor another team's replicas.
"""

from __future__ import annotations

from dataclasses import dataclass

import pydantic
from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import protojson
from modelplane.capacity import DeploymentKey
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.structs import string_at
from modelplane.kinds import API_VERSION
from modelplane.problems import describe, invalid
from modelplane.scheduling.priority import Priority, PriorityProblem, answer_to
from modelplane.scheduling.quotas import Quota, Quotas, quota_of
from modelplane_models.fleet_priority_class import FleetPriorityClass
from modelplane_models.fleet_quota import FleetQuota

QUOTAS = Requirement("quotas", API_VERSION, "FleetQuota")
PRIORITY_CLASSES = Requirement("priorityclasses", API_VERSION, "FleetPriorityClass")
QUOTA_REQUIREMENTS = (QUOTAS, PRIORITY_CLASSES)


@dataclass(frozen=True)
class Answer:
    """What the deployment answers to: its quotas and priority, or why its spec.priority cannot be used."""

    quotas: Quotas
    priority: Priority
    problem: PriorityProblem | None = None


def request_quotas(rsp: fnv1.RunFunctionResponse) -> None:
    """Ask for every FleetQuota and every FleetPriorityClass."""
    QUOTAS.request(rsp)
    PRIORITY_CLASSES.request(rsp)


def read_quotas(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, key: DeploymentKey, name: str) -> Answer:
    """The quotas of the deployment's namespace and the priority ``name`` (``spec.priority``) resolves to."""
    quotas, resolved = answer_to(_quotas(req, rsp), _classes(req, rsp), key.namespace, name)
    if isinstance(resolved, PriorityProblem):
        return Answer(quotas, Priority(), resolved)
    return Answer(quotas, resolved)


def _quotas(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> list[Quota]:
    out = []
    for struct in QUOTAS.structs(req):
        try:
            quota = quota_of(FleetQuota.model_validate(protojson.struct_to_dict(struct)))
        except pydantic.ValidationError as err:
            name = string_at(struct, "metadata", "name")
            response.warning(rsp, f"ignoring FleetQuota {name}: it cannot be read: {describe(invalid(err))}")
            continue
        if quota is not None:
            out.append(quota)
    return out


def _classes(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> dict[str, int]:
    out = {}
    for struct in PRIORITY_CLASSES.structs(req):
        name = string_at(struct, "metadata", "name")
        try:
            klass = FleetPriorityClass.model_validate(protojson.struct_to_dict(struct))
        except pydantic.ValidationError as err:
            response.warning(rsp, f"ignoring FleetPriorityClass {name}: it cannot be read: {describe(invalid(err))}")
            continue
        if name and klass.spec is not None:
            out[name] = klass.spec.value
    return out
