"""The ModelPool function: a deployment's InferencePool, endpoint picker and route on one workload cluster.

The ModelDeployment resolved everything the pool needs (the cluster's ProviderConfig, whether its
backend routes to the pool itself, whether it runs prometheus-operator, the serving role, port and
engine) and wrote it in the pool's spec, so this function reads nothing else: each call is the spec
in, the remote objects out (``modelplane.routing.pool``), each in a provider-kubernetes Object for the
cluster. The pool is Ready once every object is. A Custom endpoint picker config that cannot be used
is reported in the Deployed condition, and every object composed before is kept as it is.
"""

from __future__ import annotations

import functools

import structlog
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import keep_all, parse_or_keep
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import name_of, namespace_of
from modelplane.names import CLUSTER_LABEL, DEPLOYMENT_LABEL, bounded_name, cluster_label, pool_host, pool_name
from modelplane.problems import Problem, describe
from modelplane.remote import wrap
from modelplane.routing.picker import Engine, InvalidPickerConfigError, picker_config, routing_of
from modelplane.routing.pool import PoolWork, pool_objects
from modelplane_models.model_pool import ModelPool

# The longest name Kubernetes allows an object (the Objects are named after the pool and their part).
_MAX_OBJECT_NAME = 253


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Write the pool's remote objects, then status, the Deployed condition and readiness."""
    xr = parse_or_keep(ledger, log, ModelPool, _invalid)
    if xr is None or xr.spec is None:
        return
    spec = xr.spec
    name, namespace = name_of(xr), namespace_of(xr)
    deployment, cluster = spec.deploymentRef.name, spec.inferenceClusterRef.name
    written = spec.endpointPicker.model_dump(mode="json", exclude_none=True) if spec.endpointPicker else {}
    picker = routing_of({"endpointPicker": written}).picker
    role = spec.role or "unified"
    try:
        config = picker_config(picker, disaggregated=role == "decode")
    except InvalidPickerConfigError as err:
        keep_all(ledger, log, Condition(Type.DEPLOYED, Status.FALSE, Reason.INVALID_SPEC, str(err)))
        return
    work = PoolWork(
        deployment=deployment,
        namespace=namespace,
        cluster=cluster,
        role=role,
        port=spec.port,
        nodes_per_worker=spec.nodesPerWorker or 1,
        engine=Engine(spec.engine or Engine.VLLM),
        picker=picker,
        config=config,
        priority=spec.priority,
        monitors=bool(spec.monitors),
        route=spec.route is not False,
    )
    labels = {DEPLOYMENT_LABEL: deployment, CLUSTER_LABEL: cluster_label(cluster)}
    remotes = pool_objects(work)
    waiting = []
    for remote in remotes:
        obj = wrap(
            remote.manifest,
            name=bounded_name(f"{name}-{remote.key}", _MAX_OBJECT_NAME),
            namespace=namespace,
            provider_config=spec.providerConfigRef.name,
        )
        obj["metadata"]["labels"] = labels
        applied = inputs.ready(req, rsp, remote.key).true
        ledger.put(remote.key, obj, ready=applied)
        if not applied:
            waiting.append(remote.key)
    # The objects follow from the spec alone, read whole by now: one it no longer calls for is not wanted.
    ledger.remove_unwritten(lambda _: True, lambda key: f"{key}: the pool no longer composes it")
    resource.update(
        rsp.desired.composite,
        {"status": {"poolName": pool_name(deployment), "host": pool_host(deployment, namespace)}},
    )
    if waiting:
        message = f"waiting for {', '.join(sorted(waiting))} on InferenceCluster {cluster}"
        set_conditions(rsp, Condition(Type.DEPLOYED, Status.FALSE, Reason.DEPLOYING, message))
    else:
        message = f"{len(remotes)} objects applied on InferenceCluster {cluster}"
        set_conditions(rsp, Condition(Type.DEPLOYED, Status.TRUE, Reason.DEPLOYED, message))
    set_ready(rsp, ready=not waiting)


FunctionRunner = functools.partial(ComposeRunner, compose)


def _invalid(problems: list[Problem]) -> Condition:
    return Condition(
        Type.DEPLOYED, Status.FALSE, Reason.INVALID_SPEC, f"the ModelPool is invalid: {describe(problems)}"
    )
