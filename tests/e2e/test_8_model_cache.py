"""A ModelCache stages the weights on the cluster before the replica that requires them starts (issue 25).

The scenario (``tests/e2e/modelcache/``): one KServe cluster ``cache-a`` on workload server
``workload-a``; ModelCache ``qwen-weights`` (storage PVC of class ``e2e-model-cache``, placement
Follow, no clusterSelector) and ModelDeployment ``qwen-cached`` of one replica with
``spec.modelCacheRef {name: qwen-weights, policy: Required}``, both in namespace
``e2e-model-cache``.

What runs for real on the workload server: the PersistentVolume binder (the claim bound to a
volume), kube-scheduler (the hydration Job's pod and the replica's pod bound to the simulated
node), the Job controller (the Job Complete once its pod Succeeded), the deployment controller and
kwok as the kubelet. What stands in: no storage provisioner runs, so the scenario pre-creates a
hostPath PersistentVolume of the claim's class, modes and size, as an admin pre-provisions static
volumes; no download runs, so the Job's pod stays Running (kwok) until the scenario annotates it
``e2e.modelplane.ai/container-exit: "0"`` and kwok turns it Succeeded. Holding it is what makes
the wait observable without a fixed sleep.

1. Placed, staged, waiting: the replica is placed on ``cache-a`` and waits (``CacheNotReady``);
   the cache follows it there: the claim ``status.claimName`` Bound to the volume, the hydration
   Job's pod bound by kube-scheduler and Running, the copy Hydrating; no workload of the replica
   on the workload server.
2. Hydrated, started: the pod exits 0, the Job controller marks the Job Complete, the copy turns
   Ready; the replica composes its workload, whose pod mounts the claim read-only at the mount
   path, and turns Ready.
3. Never drop: with placement Static (no selector: nothing keeps a copy by rule) the copy stays
   while the replica mounts it, and its status entry says so.

The times (apply to the Job Complete and to the replica Ready) are printed with the run's figures.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.names import MODEL_CACHE_LABEL, REPLICA_LABEL, cache_claim_name
from tests.e2e.figures import FIGURES, Stopwatch
from tests.e2e.kube import Kube, Manifest, condition, is_true
from tests.e2e.plane import CROSSPLANE_NAMESPACE, Plane
from tests.e2e.world import (
    LLM_INFERENCE_SERVICE,
    cluster_gone,
    conditions,
    eventually,
    ready,
    replicas_of,
    wait_condition,
    xr,
)

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent / "modelcache"
NS = "e2e-model-cache"
CLUSTER, WORKLOAD = "cache-a", "workload-a"
SECRET = "cache-a-kubeconfig"  # noqa: S105 - a Secret's name
CACHE, DEPLOYMENT = "qwen-weights", "qwen-cached"
CLAIM = cache_claim_name(CACHE)
MOUNT_PATH = f"/models/{CACHE}"  # modelCacheRef.mountPath's default
CACHE_VOLUME = "model-cache"  # the volume every pod of a replica gets (docs/model-cache.md)
STORAGE_CLASS = "e2e-model-cache"
VOLUME = "e2e-model-cache-0"
# The stand-in for the download finishing: kwok's e2e-job-pod-complete stage (tests/e2e/kwok/stages.yaml).
EXIT_ANNOTATION = "e2e.modelplane.ai/container-exit"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
# A chain of XRs (deployment, replica, cache), each woken by a watch or Crossplane's 10 s poll, and
# provider-kubernetes' 10 s poll of each remote object between them, on two loaded cores.
TIMEOUT = 240.0


@dataclass
class Scenario:
    """The running fleet and what one step leaves for the next."""

    plane: Plane
    watch: Stopwatch
    replica: str = ""
    hydrated: bool = False
    marks: dict[str, float] = field(default_factory=dict)

    @property
    def workload(self) -> Kube:
        return self.plane.workloads[WORKLOAD].kube


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((HERE / name).read_text()) if d]


def _cache_doc() -> dict[str, Any]:
    (doc,) = (d for d in _docs("models.yaml") if d["kind"] == "ModelCache")
    return doc


def _static_storage() -> list[dict[str, Any]]:
    """The storage class and the one volume an admin pre-provisions for it: of the claim's class, modes and size."""
    spec = _cache_doc()["spec"]
    assert spec["storage"]["pvc"] == {"storageClassName": STORAGE_CLASS, "accessMode": "ReadOnlyMany"}, spec
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": STORAGE_CLASS},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "Immediate",
            "reclaimPolicy": "Retain",
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": VOLUME},
            "spec": {
                "storageClassName": STORAGE_CLASS,
                # ReadOnlyMany claims also ask for ReadWriteOnce (the Job writes the copy once).
                "accessModes": ["ReadOnlyMany", "ReadWriteOnce"],
                "capacity": {"storage": spec["size"]},
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": f"/var/lib/modelplane-e2e/{VOLUME}", "type": "DirectoryOrCreate"},
            },
        },
    ]


@pytest.fixture(scope="module")
def scenario(plane: Plane) -> Iterator[Scenario]:
    """The cluster Ready and the volume pre-created; then the cache and the deployment applied."""
    plane.connect(CLUSTER, WORKLOAD, SECRET)
    workload = plane.workloads[WORKLOAD].kube
    storage = _static_storage()
    platform = _docs("platform.yaml")
    try:
        for doc in storage:
            workload.apply(doc)
        plane.kube.kubectl(["apply", "-f", str(HERE / "platform.yaml")])
        wait_condition(plane.kube, "InferenceCluster", CLUSTER, None, "Ready", timeout=TIMEOUT)
        watch = Stopwatch("model cache")
        plane.kube.kubectl(["apply", "-f", str(HERE / "models.yaml")])
        yield Scenario(plane, watch)
    finally:
        _clean_up(plane, workload, platform, storage)


def _clean_up(plane: Plane, workload: Kube, platform: list[dict[str, Any]], storage: list[dict[str, Any]]) -> None:
    """The deployment first (its replica mounts the claim), then the cache, its claim gone; then the rest."""
    kube = plane.kube
    kube.delete(kinds.API_VERSION, "ModelDeployment", DEPLOYMENT, NS)
    eventually(f"{DEPLOYMENT}'s replicas to go", lambda: not replicas_of(kube, DEPLOYMENT, NS), TIMEOUT)
    kube.delete(kinds.API_VERSION, "ModelCache", CACHE, NS)
    eventually(
        f"the claim {CLAIM} to leave {WORKLOAD}",
        lambda: workload.get("v1", "PersistentVolumeClaim", CLAIM, NS) is None,
        TIMEOUT,
    )
    for doc in reversed(platform):
        kube.delete(doc["apiVersion"], doc["kind"], doc["metadata"]["name"], doc["metadata"].get("namespace"))
    kube.delete("v1", "Namespace", NS)
    for doc in reversed(storage):
        workload.delete(doc["apiVersion"], doc["kind"], doc["metadata"]["name"])
    # The kubeconfig last: provider-kubernetes needs it to delete what the cluster put on workload-a.
    cluster_gone(kube, CLUSTER)
    kube.delete("v1", "Secret", SECRET, CROSSPLANE_NAMESPACE)


def _copy(kube: Kube) -> Mapping[str, Any]:
    """The cache's status entry for ``CLUSTER`` (empty when there is none)."""
    cache = xr(kube, "ModelCache", CACHE, NS) or {}
    return next((c for c in cache.get("status", {}).get("clusters") or [] if c.get("name") == CLUSTER), {})


def _jobs(workload: Kube) -> list[Manifest]:
    found = workload.list("batch/v1", "Job", NS, labels={MODEL_CACHE_LABEL: CACHE})
    return sorted(found, key=lambda j: str(j["metadata"]["name"]))


def _job_pods(workload: Kube, job: str) -> list[Manifest]:
    return workload.list("v1", "Pod", NS, labels={JOB_NAME_LABEL: job})


def _running_job_pod(workload: Kube) -> tuple[Manifest, Manifest] | None:
    """The hydration Job and its one pod, once the pod is bound to a node and Running; else None."""
    jobs = _jobs(workload)
    if len(jobs) != 1:
        return None
    pods = _job_pods(workload, jobs[0]["metadata"]["name"])
    if len(pods) != 1 or pods[0].get("status", {}).get("phase") != "Running":
        return None
    return jobs[0], pods[0]


def _waiting(kube: Kube) -> Manifest | None:
    """The deployment's one replica, once placed on ``CLUSTER`` and waiting for the cache (CacheNotReady)."""
    replicas = replicas_of(kube, DEPLOYMENT, NS)
    if len(replicas) != 1:
        return None
    (replica,) = replicas
    deployed = condition(replica, "Deployed")
    placed = replica.get("spec", {}).get("inferenceClusterRef", {}).get("name") == CLUSTER
    return replica if placed and deployed.get("reason") == "CacheNotReady" else None


def _replica_workloads(workload: Kube, replica: str) -> dict[str, list[str]]:
    """What the replica has on the workload server: its LLMInferenceService, Deployments and pods, by name."""
    services = [s for s in workload.list(*LLM_INFERENCE_SERVICE, NS) if s["metadata"]["name"] == replica]
    pods = workload.list("v1", "Pod", NS, labels={REPLICA_LABEL: replica})
    deployments = [
        d for d in workload.list("apps/v1", "Deployment", NS) if str(d["metadata"]["name"]).startswith(replica)
    ]
    return {
        "LLMInferenceService": [s["metadata"]["name"] for s in services],
        "Deployment": [d["metadata"]["name"] for d in deployments],
        "Pod": [p["metadata"]["name"] for p in pods],
    }


def _mount_problems(pod: Mapping[str, Any]) -> list[str]:
    """How ``pod`` fails to mount the cache's claim read-only at the mount path in every container."""
    spec = pod.get("spec", {})
    name = pod["metadata"]["name"]
    volumes = [v for v in spec.get("volumes") or [] if v.get("name") == CACHE_VOLUME]
    out = []
    if [v.get("persistentVolumeClaim") for v in volumes] != [{"claimName": CLAIM, "readOnly": True}]:
        out.append(f"pod {name}: volume {CACHE_VOLUME} is {volumes}, not claim {CLAIM} read-only")
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        mounts = [m for m in c.get("volumeMounts") or [] if m.get("name") == CACHE_VOLUME]
        if mounts != [{"name": CACHE_VOLUME, "mountPath": MOUNT_PATH, "readOnly": True}]:
            out.append(f"pod {name} container {c.get('name')}: mounts {mounts}, not {MOUNT_PATH} read-only")
    return out


def test_replica_waits_while_the_cache_hydrates(scenario: Scenario) -> None:
    kube, workload, watch = scenario.plane.kube, scenario.workload, scenario.watch
    # The replica is placed on the cluster and waits: no copy is Ready there.
    replica = eventually(f"{DEPLOYMENT}'s replica placed on {CLUSTER}, waiting (CacheNotReady)", lambda: _waiting(kube))
    name = scenario.replica = str(replica["metadata"]["name"])
    watch.mark("replica placed, waiting (CacheNotReady)")
    assert replica["metadata"]["labels"][MODEL_CACHE_LABEL] == CACHE, replica["metadata"]["labels"]
    message = condition(replica, "Deployed").get("message", "")
    assert CACHE in message and CLUSTER in message, message

    # The cache follows the replica there: its claim, Bound by the PersistentVolume binder to the volume.
    def bound() -> Manifest | None:
        claim = workload.get("v1", "PersistentVolumeClaim", CLAIM, NS)
        return claim if claim and claim.get("status", {}).get("phase") == "Bound" else None

    claim = eventually(f"claim {CLAIM} on {WORKLOAD}, Bound", bound, TIMEOUT)
    watch.mark("claim Bound")
    assert claim["spec"]["volumeName"] == VOLUME, claim["spec"]
    assert claim["spec"]["storageClassName"] == STORAGE_CLASS, claim["spec"]
    assert (xr(kube, "ModelCache", CACHE, NS) or {}).get("status", {}).get("claimName") == CLAIM

    # The hydration Job, its pod bound by kube-scheduler and Running (kwok holds it there: no download runs).
    job, pod = eventually(
        f"the hydration Job's pod on {WORKLOAD}, bound and Running", lambda: _running_job_pod(workload)
    )
    watch.mark("hydration Job's pod Running")
    assert pod["spec"].get("nodeName"), pod["spec"]
    assert is_true(pod, "PodScheduled"), pod.get("status")
    volumes = job["spec"]["template"]["spec"]["volumes"]
    assert [v.get("persistentVolumeClaim", {}).get("claimName") for v in volumes] == [CLAIM], volumes
    assert not is_true(job, "Complete"), job.get("status")

    # The copy Hydrating; the replica still waiting, with nothing of it on the workload server.
    eventually(f"{CACHE}'s copy on {CLUSTER} Hydrating", lambda: _copy(kube).get("phase") == "Hydrating", TIMEOUT)
    still = _waiting(kube)
    assert still is not None and still["metadata"]["name"] == name, conditions(xr(kube, "ModelReplica", name, NS))
    assert not ready(still)
    assert _replica_workloads(workload, name) == {"LLMInferenceService": [], "Deployment": [], "Pod": []}

    def reported() -> bool:
        deployment = xr(kube, "ModelDeployment", DEPLOYMENT, NS) or {}
        placements = deployment.get("status", {}).get("placements") or []
        return [p.get("reason") for p in placements] == ["CacheNotReady"] and condition(deployment, "CacheReady").get(
            "reason"
        ) == "CacheNotReady"

    eventually(f"{DEPLOYMENT} reporting its replica waiting for the cache", reported)
    assert _replica_workloads(workload, name) == {"LLMInferenceService": [], "Deployment": [], "Pod": []}


def test_replica_starts_once_the_job_completes_and_mounts_the_copy(scenario: Scenario) -> None:
    if not scenario.replica:
        pytest.skip("needs the wait before it (test_replica_waits_while_the_cache_hydrates)")
    kube, workload, watch, name = scenario.plane.kube, scenario.workload, scenario.watch, scenario.replica
    found = _running_job_pod(workload)
    assert found is not None, _jobs(workload)
    job, pod = found
    job_name = str(job["metadata"]["name"])
    # The download finishes: the container exits 0 (kwok), the Job controller marks the Job Complete.
    released = time.monotonic()
    workload.patch(
        "v1", "Pod", pod["metadata"]["name"], {"metadata": {"annotations": {EXIT_ANNOTATION: "0"}}}, namespace=NS
    )

    def complete() -> Manifest | None:
        found = workload.get("batch/v1", "Job", job_name, NS)
        return found if is_true(found, "Complete") else None

    job = eventually(f"Job {job_name} Complete (the Job controller)", complete, TIMEOUT)
    watch.mark("hydration Job Complete")
    FIGURES["model cache: pod exit -> Job Complete (s)"] = round(time.monotonic() - released, 1)
    assert job["status"].get("succeeded") == 1 and job["status"].get("completionTime"), job["status"]
    (pod,) = _job_pods(workload, job_name)
    assert pod["status"]["phase"] == "Succeeded", pod["status"]

    # The copy Ready; the replica composes its workload, whose pod mounts the claim read-only, and is Ready.
    completed = time.monotonic()
    eventually(f"{CACHE}'s copy on {CLUSTER} Ready", lambda: _copy(kube).get("phase") == "Ready", TIMEOUT)
    watch.mark("cache copy Ready")
    cache = xr(kube, "ModelCache", CACHE, NS) or {}
    assert cache["status"].get("ready") == 1, cache["status"]
    wait_condition(kube, "ModelReplica", name, NS, "Ready", timeout=TIMEOUT)
    watch.mark("replica Ready")
    FIGURES["model cache: Job Complete -> replica Ready (s)"] = round(time.monotonic() - completed, 1)
    has = _replica_workloads(workload, name)
    assert has["LLMInferenceService"] == [name] and has["Deployment"] and has["Pod"], has
    pods = workload.list("v1", "Pod", NS, labels={REPLICA_LABEL: name})
    problems = [p for pod in pods for p in _mount_problems(pod)]
    assert not problems, problems
    assert all(p["spec"].get("nodeName") and p["status"].get("phase") == "Running" for p in pods), pods
    wait_condition(kube, "ModelDeployment", DEPLOYMENT, NS, "CacheReady", timeout=TIMEOUT)
    scenario.hydrated = True


def test_a_mounted_copy_is_kept_when_nothing_else_keeps_it(scenario: Scenario) -> None:
    if not scenario.hydrated:
        pytest.skip("needs the replica started (test_replica_starts_once_the_job_completes_and_mounts_the_copy)")
    kube, workload, name = scenario.plane.kube, scenario.workload, scenario.replica
    claim = workload.get("v1", "PersistentVolumeClaim", CLAIM, NS) or {}
    uid = claim["metadata"]["uid"]
    # Under Follow the cluster keeps its copy by rule (the replica is placed there), not as a kept one.
    assert not str(_copy(kube).get("message", "")).startswith("kept:"), _copy(kube)
    # Placement Static with no selector: no rule keeps a copy on the cluster any more, only the replica's mount.
    kube.patch(kinds.API_VERSION, "ModelCache", CACHE, {"spec": {"placement": "Static"}}, namespace=NS)

    def kept() -> Mapping[str, Any] | None:
        entry = _copy(kube)
        return entry if str(entry.get("message", "")).startswith("kept:") else None

    entry = eventually(f"{CACHE}'s copy on {CLUSTER} kept for {name}", kept, TIMEOUT)
    assert name in entry["message"] and entry["phase"] == "Ready", entry
    claim = workload.get("v1", "PersistentVolumeClaim", CLAIM, NS) or {}
    assert claim.get("metadata", {}).get("uid") == uid and not claim["metadata"].get("deletionTimestamp"), claim
    assert ready(xr(kube, "ModelReplica", name, NS))
    pods = workload.list("v1", "Pod", NS, labels={REPLICA_LABEL: name})
    assert pods and not [p for pod in pods for p in _mount_problems(pod)], pods
