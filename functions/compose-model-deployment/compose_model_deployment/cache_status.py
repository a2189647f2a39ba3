"""What a deployment says about its ModelCache: the replicas that wait, CacheReady, the engine's --model.

A replica waits (policy Required) while its own ModelReplica says so (Deployed False, CacheNotReady);
one not composed yet, or not saying yet, is expected to wait where the copy on its cluster is not Ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_deployment.cache import Cache
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.structs import readiness_at
from modelplane.modelcache.nodelocal import SERVED_PATH
from modelplane.names import replica_key
from modelplane.scheduling import Schedule
from modelplane.scheduling.revision import CACHE_REF_KEY, cache_mount

_SHOWN = 3  # waiting replicas named in the condition; the rest are counted
_DEPLOYED = str(Type.DEPLOYED)


def _ref(spec: Mapping[str, Any]) -> dict[str, Any]:
    value = spec.get(CACHE_REF_KEY)
    return cache_mount(json_format.MessageToDict(value) if value is not None else {})


def waiting_replicas(
    req: fnv1.RunFunctionRequest, plan: Schedule, cache: Cache, ready: set[str], spec: Mapping[str, Any]
) -> dict[str, str]:
    """The replicas waiting for the cache's copy on their cluster, each with why (placement order)."""
    required = _ref(spec)["policy"] == "Required"
    out: dict[str, str] = {}
    for p in plan.placements:
        if p.held is not None or p.replica in ready:
            continue
        observed = req.observed.resources.get(replica_key(p.ordinal))
        deployed = readiness_at(observed.resource.fields, _DEPLOYED) if observed is not None else None
        if deployed is not None and deployed.reason == Reason.CACHE_NOT_READY:
            out[p.replica] = f"{p.replica} on {p.cluster}: {deployed.message or 'waits for its copy'}"
        elif required and (deployed is None or deployed.status not in ("True", "False")):
            # Not composed yet, or not saying: as its cluster's copy says.
            phase = cache.phases.get(p.cluster, ("Pending", ""))[0] if cache.found else ""
            if not cache.found:
                out[p.replica] = f"{p.replica} on {p.cluster}: ModelCache {cache.name} not found"
            elif phase != "Ready":
                out[p.replica] = f"{p.replica} on {p.cluster}: its copy there is {phase}"
    return out


def cache_condition(cache: Cache, waiting: Mapping[str, str]) -> Condition:
    """CacheReady: False naming ``spec.modelCacheRef.name`` when not found, or the replicas that wait; else True."""
    if not cache.found:
        return Condition(
            Type.CACHE_READY,
            Status.FALSE,
            Reason.CACHE_NOT_FOUND,
            f"spec.modelCacheRef.name: ModelCache {cache.name} not found: new replicas wait for it (policy"
            " Required) or start without it (Preferred); running replicas are kept",
        )
    if waiting:
        shown = "; ".join(list(waiting.values())[:_SHOWN])
        more = f" (and {len(waiting) - _SHOWN} more)" if len(waiting) > _SHOWN else ""
        return Condition(
            Type.CACHE_READY,
            Status.FALSE,
            Reason.CACHE_NOT_READY,
            f"ModelCache {cache.name}: {len(waiting)} replica(s) wait for its copy: {shown}{more}",
        )
    ready = ", ".join(sorted(cache.ready)) or "no cluster yet"
    return Condition(
        Type.CACHE_READY,
        Status.TRUE,
        Reason.CACHE_READY,
        f"ModelCache {cache.name}: no replica waits (Ready on {ready})",
    )


def engine_warnings(spec: Mapping[str, Any], *, node_local: bool = False) -> list[str]:
    """Policy Required: each role whose engine's ``--model`` names something outside where the copy is read.

    That is the cache's mount path, or for a NodeLocal cache where KServe mounts the node-local copy.
    """
    ref = _ref(spec)
    if ref["policy"] != "Required":
        return []
    path = SERVED_PATH if node_local else str(ref["mountPath"]).rstrip("/")
    where = "where KServe mounts a NodeLocal copy" if node_local else "spec.modelCacheRef's mount path"
    out = []
    for at, block in (
        ("spec", spec),
        ("spec.prefill", _fields(spec, "prefill")),
        ("spec.decode", _fields(spec, "decode")),
    ):
        workers = _fields(block, "workers")
        template = json_format.MessageToDict(workers["template"]) if "template" in workers else {}
        containers = (template.get("spec") or {}).get("containers") or []
        args = [str(a) for a in (containers[0].get("args") or [])] if containers else []
        model = _model_arg(args)
        if model is not None and model != path and not model.startswith(f"{path}/"):
            out.append(
                f"{at}.workers.template.spec.containers[0].args: --model={model} is not under"
                f" {where} {path}: the engine will not read the cache's copy"
            )
    return out


def _fields(spec: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = spec.get(key)
    return value.struct_value.fields if value is not None and value.HasField("struct_value") else {}


def _model_arg(args: list[str]) -> str | None:
    """The value of ``--model`` (``--model=X`` or ``--model X``); None without one."""
    for i, arg in enumerate(args):
        if arg.startswith("--model="):
            return arg.removeprefix("--model=")
        if arg == "--model" and i + 1 < len(args):
            return args[i + 1]
    return None
