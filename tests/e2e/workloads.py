"""Stand-ins for KServe's and LeaderWorkerSet's controllers that create what the real ones would.

Neither controller can run here (KServe's module tree does not build, the
LeaderWorkerSet module is not served by the proxy), so these create the
objects they would, and the real Kubernetes machinery does the rest: the
deployment controller makes pods, kube-scheduler binds them to the simulated
nodes with their ResourceClaims allocated, kwok makes them Ready.

- An LLMInferenceService gets a Deployment per role (``<name>-kserve``, and
  ``<name>-kserve-prefill``) running ``spec.template`` with ``spec.labels`` on
  its pods, or, for a multi-node worker (``spec.worker``), a LeaderWorkerSet
  (``<name>-kserve-mn``) of ``pipeline x data / dataLocal`` pods per group.
  It is Ready when they are, and otherwise says why, from its pods.
- A LeaderWorkerSet gets its pods: per group ``g``, the leader ``<name>-<g>``
  and the workers ``<name>-<g>-<i>``, labelled as the real controller labels
  them, each from the leader or worker template; its status counts the groups
  whose pods are all Ready.

The functions here are pure (they are unit-tested without an API server);
``WorkloadStandIn`` applies them.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tests.e2e.kube import ApiError, Kube

Manifest = dict[str, Any]
LLM_INFERENCE_SERVICE = ("serving.kserve.io/v1alpha2", "LLMInferenceService")
LWS = ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
HASH_ANNOTATION = "e2e.modelplane.ai/template-hash"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
KSERVE_NAME_LABEL = "app.kubernetes.io/name"
KSERVE_COMPONENT_LABEL = "app.kubernetes.io/component"


def digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _owner(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": False,
    }


def _generation(obj: Mapping[str, Any]) -> int:
    return int(obj.get("metadata", {}).get("generation", 1))


def nodes_per_group(parallelism: Mapping[str, Any]) -> int:
    """Pods of one multi-node worker, as KServe sizes its LeaderWorkerSet from the parallelism."""
    pipeline = int(parallelism.get("pipeline") or 1)
    data = int(parallelism.get("data") or 1)
    data_local = int(parallelism.get("dataLocal") or 1)
    return max(1, pipeline * max(1, data // max(1, data_local)))


# --- KServe ----------------------------------------------------------------------------------------


def kserve_workloads(service: Mapping[str, Any]) -> list[Manifest]:
    """The Deployments or LeaderWorkerSets KServe would create for ``service``."""
    spec = service.get("spec", {})
    out = [_kserve_workload(service, spec, "")]
    if spec.get("prefill"):
        out.append(_kserve_workload(service, spec["prefill"], "-prefill"))
    return out


def _kserve_workload(service: Mapping[str, Any], role: Mapping[str, Any], suffix: str) -> Manifest:
    meta = service["metadata"]
    multi_node = bool(role.get("worker"))
    name = f"{meta['name']}-kserve{'-mn' if multi_node else ''}{suffix}"
    select = {KSERVE_NAME_LABEL: str(meta["name"]), KSERVE_COMPONENT_LABEL: f"llminferenceservice-workload{suffix}"}
    pod_meta: dict[str, Any] = {"labels": {**(role.get("labels") or {}), **select}}
    if role.get("annotations"):
        pod_meta["annotations"] = dict(role["annotations"])
    template = {"metadata": pod_meta, "spec": dict(role.get("template") or {})}
    replicas = int(role.get("replicas", 1))
    body: Manifest
    if multi_node:
        worker = {"metadata": pod_meta, "spec": dict(role["worker"])}
        body = {
            "apiVersion": LWS[0],
            "kind": LWS[1],
            "spec": {
                "replicas": replicas,
                "leaderWorkerTemplate": {
                    "size": nodes_per_group(role.get("parallelism") or {}),
                    "leaderTemplate": template,
                    "workerTemplate": worker,
                },
            },
        }
    else:
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "spec": {"replicas": replicas, "selector": {"matchLabels": select}, "template": template},
        }
    body["metadata"] = {
        "name": name,
        "namespace": meta["namespace"],
        "labels": dict(select),
        # The owner's uid too: a service deleted and created again gets workloads of its own.
        "annotations": {HASH_ANNOTATION: digest([body["spec"], meta.get("uid", "")])},
        "ownerReferences": [_owner(service)],
    }
    return body


def workload_ready(obj: Mapping[str, Any] | None, want: Mapping[str, Any]) -> bool:
    """Whether a Deployment or LeaderWorkerSet runs ``want``'s spec with every replica ready."""
    wanted = want["metadata"]["annotations"][HASH_ANNOTATION]
    if obj is None or obj.get("metadata", {}).get("annotations", {}).get(HASH_ANNOTATION) != wanted:
        return False
    status = obj.get("status", {})
    replicas = int(want["spec"]["replicas"])
    if status.get("observedGeneration") != _generation(obj):
        return False
    if obj["kind"] == "Deployment":
        return (
            int(status.get("updatedReplicas") or 0) == replicas
            and int(status.get("readyReplicas") or 0) == replicas
            and int(status.get("availableReplicas") or 0) == replicas
            and int(status.get("replicas") or 0) == replicas
        )
    return int(status.get("readyReplicas") or 0) == replicas


def _pod_condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((c for c in pod.get("status", {}).get("conditions") or [] if c.get("type") == kind), {})


def pods_problem(pods: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """Why pods are not all Ready: the first unschedulable pod's reason and message, else a count."""
    live = [p for p in pods if not p.get("metadata", {}).get("deletionTimestamp")]
    for pod in sorted(live, key=lambda p: str(p["metadata"]["name"])):
        scheduled = _pod_condition(pod, "PodScheduled")
        if scheduled.get("status") == "False":
            return str(
                scheduled.get("reason") or "Unschedulable"
            ), f"pod {pod['metadata']['name']}: {scheduled.get('message', '')}"
    ready = sum(1 for p in live if _pod_condition(p, "Ready").get("status") == "True")
    return "PodsNotReady", f"{ready}/{len(live)} pods ready"


def kserve_status(
    service: Mapping[str, Any],
    workloads: Sequence[tuple[Mapping[str, Any] | None, Mapping[str, Any]]],
    pods: Sequence[Mapping[str, Any]],
    loaded: Callable[[Mapping[str, Any]], bool],
) -> dict[str, Any] | None:
    """The LLMInferenceService's status from its workloads (observed, wanted) and pods; None when unchanged.

    Ready once every workload is ready and ``loaded`` says the model has loaded (the e2e load delay).
    """
    generation = _generation(service)
    if all(workload_ready(found, want) for found, want in workloads) and loaded(service):
        ready = {"type": "Ready", "status": "True", "reason": "Available", "message": "every workload pod is Ready"}
    elif all(workload_ready(found, want) for found, want in workloads):
        ready = {"type": "Ready", "status": "False", "reason": "Loading", "message": "loading the model"}
    else:
        reason, message = pods_problem(pods)
        ready = {"type": "Ready", "status": "False", "reason": reason, "message": message}
    current: Mapping[str, Any] = next(
        (c for c in service.get("status", {}).get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    observed = service.get("status", {}).get("observedGeneration") == generation
    if observed and all(current.get(k) == v for k, v in ready.items()):
        return None
    condition = {**ready, "observedGeneration": generation, "lastTransitionTime": _now()}
    return {"observedGeneration": generation, "conditions": [condition]}


# --- LeaderWorkerSet -------------------------------------------------------------------------------


def lws_pods(lws: Mapping[str, Any]) -> list[Manifest]:
    """The pods of every group of ``lws``: leader ``<name>-<g>``, workers ``<name>-<g>-<i>``."""
    meta, spec = lws["metadata"], lws.get("spec", {})
    template = spec.get("leaderWorkerTemplate", {})
    size = int(template.get("size", 1))
    worker = template.get("workerTemplate") or {}
    leader = template.get("leaderTemplate") or worker
    out = []
    for group in range(int(spec.get("replicas", 1))):
        for index in range(size):
            source = leader if index == 0 else worker
            name = f"{meta['name']}-{group}" if index == 0 else f"{meta['name']}-{group}-{index}"
            src_meta = source.get("metadata") or {}
            labels = {
                **(src_meta.get("labels") or {}),
                LWS_NAME_LABEL: str(meta["name"]),
                LWS_GROUP_LABEL: str(group),
                LWS_WORKER_LABEL: str(index),
            }
            pod_spec = dict(source.get("spec") or {})
            annotations = {**(src_meta.get("annotations") or {}), HASH_ANNOTATION: digest(pod_spec)}
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "namespace": meta["namespace"],
                        "labels": labels,
                        "annotations": annotations,
                        "ownerReferences": [_owner(lws)],
                    },
                    "spec": pod_spec,
                }
            )
    return out


def lws_status(lws: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Groups whose pods are all there, current and Ready; None when the status says so already."""
    want = lws_pods(lws)
    by_name = {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}
    groups: dict[str, bool] = {}
    for pod in want:
        found = by_name.get(pod["metadata"]["name"])
        ok = (
            found is not None
            and found["metadata"].get("annotations", {}).get(HASH_ANNOTATION)
            == pod["metadata"]["annotations"][HASH_ANNOTATION]
            and _pod_condition(found, "Ready").get("status") == "True"
        )
        group = pod["metadata"]["labels"][LWS_GROUP_LABEL]
        groups[group] = groups.get(group, True) and ok
    replicas = int(lws.get("spec", {}).get("replicas", 1))
    ready = sum(1 for ok in groups.values() if ok)
    generation = _generation(lws)
    available = ready == replicas
    status = lws.get("status", {})
    current: Mapping[str, Any] = next((c for c in status.get("conditions") or [] if c.get("type") == "Available"), {})
    if (
        status.get("observedGeneration") == generation
        and status.get("readyReplicas") == ready
        and status.get("replicas") == replicas
        and current.get("status") == ("True" if available else "False")
    ):
        return None
    condition = {
        "type": "Available",
        "status": "True" if available else "False",
        "reason": "AllGroupsReady" if available else "GroupsNotReady",
        "message": f"{ready}/{replicas} groups ready",
        "lastTransitionTime": _now(),
    }
    return {"observedGeneration": generation, "replicas": replicas, "readyReplicas": ready, "conditions": [condition]}


class WorkloadStandIn:
    """Applies the KServe and LeaderWorkerSet stand-ins on one workload server, one round at a time."""

    def __init__(self, kube: Kube, loaded: Callable[[Mapping[str, Any], str], bool], scope: str) -> None:
        self.kube = kube
        self._loaded = loaded
        self._scope = scope
        self.writes = 0

    def round(self) -> None:
        self._kserve()
        self._lws()

    def _kserve(self) -> None:
        for service in self.kube.list(*LLM_INFERENCE_SERVICE):
            if service["metadata"].get("deletionTimestamp"):
                continue
            pairs = []
            for want in kserve_workloads(service):
                meta = want["metadata"]
                found = self.kube.get(want["apiVersion"], want["kind"], meta["name"], meta["namespace"])
                if (
                    found is None
                    or found["metadata"].get("annotations", {}).get(HASH_ANNOTATION)
                    != meta["annotations"][HASH_ANNOTATION]
                ):
                    found = self.kube.apply(want, manager="e2e-kserve-stand-in")
                    self.writes += 1
                pairs.append((found, want))
            ns = service["metadata"]["namespace"]
            pods = self.kube.list("v1", "Pod", ns, labels={KSERVE_NAME_LABEL: service["metadata"]["name"]})
            status = kserve_status(service, pairs, pods, lambda s: self._loaded(s, self._scope))
            if status is not None:
                self.kube.patch(
                    *LLM_INFERENCE_SERVICE,
                    service["metadata"]["name"],
                    {"status": status},
                    namespace=ns,
                    subresource="status",
                )
                self.writes += 1

    def _lws(self) -> None:
        for lws in self.kube.list(*LWS):
            meta = lws["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            ns = meta["namespace"]
            pods = self.kube.list("v1", "Pod", ns, labels={LWS_NAME_LABEL: meta["name"]})
            want = {p["metadata"]["name"]: p for p in lws_pods(lws)}
            for pod in pods:
                name = pod["metadata"]["name"]
                if pod["metadata"].get("deletionTimestamp"):
                    continue
                wanted = want.get(name)
                stale = (
                    wanted is None
                    or pod["metadata"].get("annotations", {}).get(HASH_ANNOTATION)
                    != wanted["metadata"]["annotations"][HASH_ANNOTATION]
                )
                if stale:
                    self.kube.delete("v1", "Pod", name, ns)
                    self.writes += 1
            present = {p["metadata"]["name"] for p in pods}
            for name, pod in sorted(want.items()):
                if name not in present:
                    try:
                        self.kube.create(pod)
                        self.writes += 1
                    except ApiError as err:
                        if err.status != 409:  # already there (being deleted)
                            raise
            status = lws_status(lws, self.kube.list("v1", "Pod", ns, labels={LWS_NAME_LABEL: meta["name"]}))
            if status is not None:
                self.kube.patch(*LWS, meta["name"], {"status": status}, namespace=ns, subresource="status")
                self.writes += 1
