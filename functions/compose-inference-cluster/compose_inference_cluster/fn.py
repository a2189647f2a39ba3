"""The InferenceCluster function: the cluster, the ProviderConfigs that reach it, its ServingStack, its capacity.

One module per concept: ``cloud`` (a GKE, EKS or AKS cluster and its node
pools), ``access`` (the kubeconfig, an Existing cluster's Secret, the
ProviderConfigs), ``stack`` (the ServingStack), ``watches`` (Observe-only
Objects of the workload scheduler's status objects, as its row of
``modelplane.schedulers.SCHEDULERS`` asks), ``capacity`` (``status.capacity``
from those and the cluster's ModelReplicas), ``drain`` (``status.drain``) and
``removing`` (pools out of the spec kept while ModelReplicas run on them).
What was composed is never dropped for an input that goes missing: it is kept,
and a condition says why.
"""

from __future__ import annotations

import functools
from typing import Any

import pydantic
import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_inference_cluster.access import (
    access_of,
    existing_provisioned,
    fetched,
    request_kubeconfig,
    write_provider_configs,
)
from compose_inference_cluster.capacity import REPLICAS, cluster_capacity, request_replicas
from compose_inference_cluster.cloud import published_refs, write_cloud
from compose_inference_cluster.drain import drain_status, drained_condition
from compose_inference_cluster.removing import published_classes, removed_condition, removing_pools, removing_status
from compose_inference_cluster.stack import published_stack_refs, write_stack
from compose_inference_cluster.watches import write_watches
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import parse_or_keep, wait
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import name_of
from modelplane.kinds import API_VERSION
from modelplane.layout import METADATA, Layout
from modelplane.problems import Problem, describe, invalid
from modelplane.remote import PROVIDER_CONFIG_KIND
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster

CLASSES = Requirement("classes", API_VERSION, "InferenceClass")
# What the function reads of a class besides its spec, which its model validates.
_CLASS: Layout = {"metadata": METADATA}


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Compose the cluster (``_compose``), then publish what its replicas use whatever path the call took.

    ModelReplicas' Usages keep its cloud objects and its ServingStack's anchor until the replicas are
    gone (``modelplane.clusters.usage``): a call that waits for an input or keeps everything for an
    invalid spec still publishes what it keeps.
    """
    _compose(req, rsp, ledger, log)
    used = {"cloudResourceRefs": published_refs(rsp), "stackResourceRefs": published_stack_refs(req, rsp)}
    if any(used.values()):
        # Beside whatever status the call wrote, not instead of it.
        rsp.desired.composite.resource.fields["status"].struct_value.update({k: v for k, v in used.items() if v})


def _compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Resolve inputs, compose the cluster and what reaches it, its stack and scheduler Objects, then status."""
    CLASSES.request(rsp)
    request_replicas(req, rsp)
    xr = parse_or_keep(ledger, log, InferenceCluster, _invalid, _spec_problems)
    if xr is None or xr.spec is None:
        return
    spec = xr.spec
    name = name_of(xr)
    access = access_of(spec.cluster, name)
    request_kubeconfig(rsp, access)
    if not (CLASSES.fetched(req) and REPLICAS.fetched(req) and fetched(req, access)):
        wait(ledger, log, Type.PROVISIONED, Reason.WAITING_FOR_INPUTS, "reading classes and secrets")
        return
    classes = _classes(req, rsp)
    removing = removing_pools(
        REPLICAS.structs(req), name, {p.name for p in spec.nodePools or []}, published_classes(req)
    )
    provisioned = write_cloud(ledger, name, spec, classes, [p.name for p in removing]) or existing_provisioned(
        req, access
    )
    write_provider_configs(ledger, name, access)
    stack = write_stack(ledger, name, spec)
    capacity = cluster_capacity(req, rsp, xr, spec, write_watches(ledger, name, spec.scheduler), classes)
    drain = drain_status(REPLICAS.structs(req), name) if spec.drain else None
    status: dict[str, Any] = {
        # A draining cluster takes no new replicas, as kubectl drain cordons first.
        "cordoned": bool(spec.cordoned) or bool(spec.drain),
        "providerConfigRef": {"name": name, "kind": PROVIDER_CONFIG_KIND},
        "capacity": capacity.status,
        **({"cost": capacity.cost} if capacity.cost is not None else {}),
        **({"drain": drain} if drain is not None else {}),
        **({"removingPools": removing_status(removing)} if removing else {}),
    }
    if stack.gateway:
        status["gateway"] = stack.gateway
    if stack.components:
        status["components"] = stack.components
    resource.update(rsp.desired.composite, {"status": status})
    stack_ready = stack.ready
    why = f": {stack.installed}" if stack.installed else ""
    installed = (
        Condition(Type.STACK_READY, Status.TRUE, Reason.AVAILABLE, f"ServingStack {name} is ready")
        if stack_ready
        else Condition(Type.STACK_READY, Status.FALSE, Reason.INSTALLING, f"ServingStack {name} is not ready yet{why}")
    )
    removed = removed_condition(removing)
    set_conditions(
        rsp,
        provisioned,
        installed,
        stack.tls,
        stack.found,
        capacity.known,
        drained_condition(drain),
        capacity.overcommitted,
        removed,
    )
    if provisioned.status != Status.TRUE and provisioned.reason != Reason.PROVISIONING:
        response.warning(rsp, f"{provisioned.reason}: {provisioned.message}")
    ready = provisioned.status == Status.TRUE and stack_ready
    set_ready(rsp, ready=ready)
    log.debug("composed", cluster=name, ready=ready, capacity_source=capacity.known.reason)


FunctionRunner = functools.partial(ComposeRunner, compose)


def _invalid(problems: list[Problem]) -> Condition:
    return Condition(Type.PROVISIONED, Status.FALSE, Reason.INVALID_SPEC, f"invalid: {describe(problems)}")


def _spec_problems(xr: InferenceCluster) -> list[Problem]:
    """What the XRD's rules refuse and the model does not check, among the fields this function needs."""
    spec = xr.spec
    if spec is None:
        return [Problem("spec", "required")]
    out = []
    source = spec.cluster.source
    if getattr(spec.cluster, source.lower()) is None:
        out.append(Problem(f"spec.cluster.{source.lower()}", f"required when spec.cluster.source is {source}"))
    if spec.scheduler is not None and spec.scheduler.type == "KAI" and spec.scheduler.kai is None:
        out.append(Problem("spec.scheduler.kai", "required when spec.scheduler.type is KAI"))
    return out


def _classes(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> dict[str, InferenceClass]:
    """The InferenceClasses with a spec that validates, by name (the others are reported and left out)."""
    out: dict[str, InferenceClass] = {}
    for item in inputs.required(req, rsp, CLASSES.name, _CLASS):
        name = item.get("metadata", {}).get("name")
        if not name:
            continue
        try:
            klass = InferenceClass.model_validate({"spec": item.get("spec")})
        except pydantic.ValidationError as err:
            inputs.report(rsp, f"InferenceClass {name}", invalid(err))
            continue
        if klass.spec is not None:
            out[str(name)] = klass
    return out
