"""What the scenarios ask of the running system: Modelplane objects, their conditions, remote objects."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from modelplane import kinds
from modelplane.names import CONTROL_PLANE_NAMESPACE, DEPLOYMENT_LABEL
from modelplane.readiness import readiness_of
from tests.e2e.figures import WAITS
from tests.e2e.kube import Kube, Manifest, condition
from tests.e2e.procs import wait_for

T = TypeVar("T")
OBJECT = ("kubernetes.m.crossplane.io/v1alpha1", "Object")
# Long enough for a cold Crossplane to reconcile a chain of XRs; short enough to fail a run in minutes.
TIMEOUT = 90.0


def eventually(what: str, probe: Callable[[], T | None], timeout: float = TIMEOUT) -> T:
    """``probe()``'s first truthy answer; a TimeoutError naming ``what`` otherwise.

    Each wait is traced on stderr with how long it took (pytest shows it for a failed test).
    """
    began = time.monotonic()
    try:
        return wait_for(what, probe, timeout=timeout, interval=0.5)
    finally:
        took = time.monotonic() - began
        WAITS.append((took, what))
        print(f"e2e: {took:5.1f}s waiting for {what}", file=sys.stderr)  # noqa: T201


def xr(kube: Kube, kind: str, name: str, namespace: str | None = None) -> Manifest | None:
    """The Modelplane object ``kind``/``name``."""
    return kube.get(kinds.API_VERSION, kind, name, namespace)


def conditions(obj: Mapping[str, Any] | None) -> str:
    """A one-line summary of ``obj``'s conditions, for failure messages."""
    found = (obj or {}).get("status", {}).get("conditions") or []
    return "; ".join(f"{c.get('type')}={c.get('status')} ({c.get('reason')}: {c.get('message', '')})" for c in found)


def has_condition(
    kube: Kube, kind: str, name: str, namespace: str | None, kind_of_condition: str, status: str = "True"
) -> Manifest | None:
    """The object once its condition ``kind_of_condition`` has ``status``; else None."""
    obj = xr(kube, kind, name, namespace)
    return obj if condition(obj, kind_of_condition).get("status") == status else None


def wait_condition(
    kube: Kube,
    kind: str,
    name: str,
    namespace: str | None,
    kind_of_condition: str,
    status: str = "True",
    *,
    timeout: float = TIMEOUT,
) -> Manifest:
    """Wait for ``kind``/``name`` to report ``kind_of_condition`` = ``status``; fail with its conditions."""
    try:
        return eventually(
            f"{kind} {name} {kind_of_condition}={status}",
            lambda: has_condition(kube, kind, name, namespace, kind_of_condition, status),
            timeout,
        )
    except TimeoutError as err:
        obj = xr(kube, kind, name, namespace)
        msg = f"{err}; its conditions: {conditions(obj)}"
        raise TimeoutError(msg) from None


def replicas_of(kube: Kube, deployment: str, namespace: str) -> list[Manifest]:
    """The ModelReplicas a ModelDeployment composed, by name."""
    found = kube.list(kinds.API_VERSION, "ModelReplica", namespace, labels={DEPLOYMENT_LABEL: deployment})
    return sorted(found, key=lambda r: str(r["metadata"]["name"]))


def remote_objects(kube: Kube, replica: str, namespace: str) -> list[Manifest]:
    """The provider-kubernetes Objects a ModelReplica composed (its resourceRefs of kind Object)."""
    obj = xr(kube, "ModelReplica", replica, namespace) or {}
    refs = obj.get("spec", {}).get("crossplane", {}).get("resourceRefs") or []
    out = []
    for ref in refs:
        if ref.get("kind") == "Object":
            found = kube.get(*OBJECT, ref["name"], namespace)
            if found is not None:
                out.append(found)
    return out


def manifest_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The remote manifest a provider-kubernetes Object carries."""
    manifest: Mapping[str, Any] = obj["spec"]["forProvider"]["manifest"]
    return manifest


def present(kube: Kube, manifest: Mapping[str, Any]) -> Manifest | None:
    """The object ``manifest`` names, as it exists on ``kube`` (None when it does not)."""
    meta = manifest.get("metadata", {})
    return kube.get(str(manifest["apiVersion"]), str(manifest["kind"]), str(meta["name"]), meta.get("namespace"))


def ready(obj: Mapping[str, Any] | None) -> bool:
    """Whether ``obj`` reports Ready, as Modelplane reads it (``modelplane.readiness``).

    For a Modelplane XR its function's ``status.readyVerdict`` decides: Crossplane core can write
    the Ready condition back stale for a moment, and Modelplane's own readers do not follow that.
    """
    return readiness_of(obj).true


def landed(control: Kube, workload: Kube, replica: str, namespace: str) -> list[Manifest]:
    """The replica's remote objects as they exist on ``workload``, once every one is there; else []."""
    objects = remote_objects(control, replica, namespace)
    found = [present(workload, manifest_of(o)) for o in objects]
    return [f for f in found if f is not None] if objects and all(found) else []


LLM_INFERENCE_SERVICE = ("serving.kserve.io/v1alpha2", "LLMInferenceService")


def deleting(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is being deleted (it has a deletionTimestamp)."""
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))


def serving(obj: Mapping[str, Any]) -> bool:
    """Whether a workload reports Ready for its current generation and is not being deleted.

    What its controller last said about the spec it runs now: a Ready condition
    written for an older generation (``status.observedGeneration`` behind
    ``metadata.generation``) says nothing about it.
    """
    generation = obj.get("metadata", {}).get("generation")
    observed = obj.get("status", {}).get("observedGeneration")
    return ready(obj) and not deleting(obj) and observed is not None and observed == generation


def images(obj: Mapping[str, Any]) -> set[str]:
    """Every container image named in ``obj``'s spec."""
    found: set[str] = set()

    def walk(node: object, key: str) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, str(k))
        elif isinstance(node, list):
            for item in node:
                walk(item, key)
        elif key == "image" and isinstance(node, str):
            found.add(node)

    walk(obj.get("spec", {}), "")
    return found


def cluster_gone(kube: Kube, cluster: str) -> None:
    """Wait until every Object InferenceCluster ``cluster`` and its ServingStack composed is gone.

    Both name their Objects' composite ``cluster``. Until those are gone, provider-kubernetes may
    still delete what they put on the workload cluster (the gateway's namespace): a next scenario
    on the same workload server would see its own copy deleted under it.
    """
    eventually(
        f"every Object of InferenceCluster {cluster} and its ServingStack to be gone",
        lambda: not kube.list(*OBJECT, CONTROL_PLANE_NAMESPACE, {"crossplane.io/composite": cluster}),
    )
