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
4. A missing Secret (``secret.yaml``: ModelCache ``gated-weights``, an HTTP source whose
   ``secretRef`` names a Secret that is not on the workload server, its own pre-created volume):
   the hydration Job's pod runs ``check-secret`` first; kwok plays its exit 3 when the scenario
   annotates the pod ``e2e.modelplane.ai/init-container-exit: "3"``, the real Job controller
   applies the Job's podFailurePolicy (Failed, reason PodFailurePolicy), and the copy is Failed
   with a message naming ``spec.source.http.secretRef``, the ModelCache's Deployed condition
   False with reason SecretNotFound; the claim stays. A new ``modelplane.ai/hydration-retry``
   value starts a new Job on the same claim.

The times (apply to the Job Complete and to the replica Ready; check-secret's exit to the Job
Failed and to the copy Failed) are printed with the run's figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.names import HYDRATION_RETRY_ANNOTATION, MODEL_CACHE_LABEL, REPLICA_LABEL, cache_claim_name
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
# Scenario 4: a cache whose Secret is missing, its claim, the volume reserved for that claim, and kwok's
# stand-in for check-secret's exit 3 (stage e2e-job-pod-init-failed).
GATED, ABSENT_SECRET = "gated-weights", "e2e-absent-token"
GATED_CLAIM = cache_claim_name(GATED)
GATED_VOLUME = "e2e-model-cache-1"
INIT_EXIT_ANNOTATION = "e2e.modelplane.ai/init-container-exit"
# A chain of XRs (deployment, replica, cache), each woken by a watch or Crossplane's poll, and
# provider-kubernetes' poll of each remote object between them, on two loaded cores.
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
        _gated_volume(),
    ]


def _gated_volume() -> dict[str, Any]:
    """Scenario 4's volume, reserved for its claim (``claimRef``) so the first cache's claim cannot take it."""
    (doc,) = _docs("secret.yaml")
    assert doc["spec"]["storage"]["pvc"]["storageClassName"] == STORAGE_CLASS, doc["spec"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": GATED_VOLUME},
        "spec": {
            "storageClassName": STORAGE_CLASS,
            "accessModes": ["ReadOnlyMany", "ReadWriteOnce"],
            "capacity": {"storage": doc["spec"]["size"]},
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": NS, "name": GATED_CLAIM},
            "hostPath": {"path": f"/var/lib/modelplane-e2e/{GATED_VOLUME}", "type": "DirectoryOrCreate"},
        },
    }


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
    """The deployment first (its replica mounts the claim), then the caches, their claims gone; then the rest."""
    kube = plane.kube
    kube.delete(kinds.API_VERSION, "ModelDeployment", DEPLOYMENT, NS)
    eventually(f"{DEPLOYMENT}'s replicas to go", lambda: not replicas_of(kube, DEPLOYMENT, NS), TIMEOUT)
    for cache, claim in ((CACHE, CLAIM), (GATED, GATED_CLAIM)):
        kube.delete(kinds.API_VERSION, "ModelCache", cache, NS)
        eventually(f"the claim {claim} to leave {WORKLOAD}", _gone(workload, claim), TIMEOUT)
    for doc in reversed(platform):
        kube.delete(doc["apiVersion"], doc["kind"], doc["metadata"]["name"], doc["metadata"].get("namespace"))
    kube.delete("v1", "Namespace", NS)
    for doc in reversed(storage):
        workload.delete(doc["apiVersion"], doc["kind"], doc["metadata"]["name"])
    # The kubeconfig last: provider-kubernetes needs it to delete what the cluster put on workload-a.
    cluster_gone(kube, CLUSTER)
    kube.delete("v1", "Secret", SECRET, CROSSPLANE_NAMESPACE)


def _gone(workload: Kube, claim: str) -> Callable[[], bool]:
    return lambda: workload.get("v1", "PersistentVolumeClaim", claim, NS) is None


def _copy(kube: Kube, cache: str = CACHE) -> Mapping[str, Any]:
    """The cache's status entry for ``CLUSTER`` (empty when there is none)."""
    found = xr(kube, "ModelCache", cache, NS) or {}
    return next((c for c in found.get("status", {}).get("clusters") or [] if c.get("name") == CLUSTER), {})


def _jobs(workload: Kube, cache: str = CACHE) -> list[Manifest]:
    found = workload.list("batch/v1", "Job", NS, labels={MODEL_CACHE_LABEL: cache})
    return sorted(found, key=lambda j: str(j["metadata"]["name"]))


def _job_pods(workload: Kube, job: str) -> list[Manifest]:
    return workload.list("v1", "Pod", NS, labels={JOB_NAME_LABEL: job})


def _running_job_pod(workload: Kube, cache: str = CACHE) -> tuple[Manifest, Manifest] | None:
    """The hydration Job and its one pod, once the pod is bound to a node and Running; else None."""
    jobs = _jobs(workload, cache)
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


def test_a_missing_source_secret_fails_the_copy_naming_the_field(scenario: Scenario) -> None:
    kube, workload = scenario.plane.kube, scenario.workload
    assert workload.get("v1", "Secret", ABSENT_SECRET, NS) is None
    scenario.plane.kube.kubectl(["apply", "-f", str(HERE / "secret.yaml")])

    # Its claim Bound to the volume reserved for it; its Job's pod Running, check-secret first.
    def bound() -> Manifest | None:
        claim = workload.get("v1", "PersistentVolumeClaim", GATED_CLAIM, NS)
        return claim if claim and claim.get("status", {}).get("phase") == "Bound" else None

    uid = eventually(f"claim {GATED_CLAIM} on {WORKLOAD}, Bound", bound, TIMEOUT)["metadata"]["uid"]
    job, pod = eventually(
        f"{GATED}'s hydration Job's pod on {WORKLOAD}, Running", lambda: _running_job_pod(workload, GATED), TIMEOUT
    )
    job_name = str(job["metadata"]["name"])
    assert [c["name"] for c in pod["spec"].get("initContainers") or []] == ["check-secret"], pod["spec"]
    rules = job["spec"].get("podFailurePolicy", {}).get("rules")
    assert rules == [
        {"action": "FailJob", "onExitCodes": {"containerName": "check-secret", "operator": "In", "values": [3]}}
    ], job["spec"]

    # check-secret finds no Secret and exits 3 (kwok); the real Job controller applies the podFailurePolicy.
    exited = time.monotonic()
    workload.patch(
        "v1", "Pod", pod["metadata"]["name"], {"metadata": {"annotations": {INIT_EXIT_ANNOTATION: "3"}}}, namespace=NS
    )

    def failed() -> Manifest | None:
        found = workload.get("batch/v1", "Job", job_name, NS)
        return found if is_true(found, "Failed") else None

    job = eventually(f"Job {job_name} Failed (the Job controller's podFailurePolicy)", failed, TIMEOUT)
    FIGURES["model cache: check-secret exit 3 -> Job Failed (s)"] = round(time.monotonic() - exited, 1)
    assert condition(job, "Failed").get("reason") == "PodFailurePolicy", job["status"]
    # Failed at once: no retry of a pod whose Secret is missing.
    assert len(_job_pods(workload, job_name)) == 1, _job_pods(workload, job_name)

    # The copy Failed, naming the field; the cache's Deployed condition says SecretNotFound.
    job_failed = time.monotonic()
    says = (
        f"spec.source.http.secretRef: Secret {ABSENT_SECRET} (key token) not found in namespace {NS}"
        f" on InferenceCluster {CLUSTER}"
    )

    def copy_failed() -> Mapping[str, Any] | None:
        entry = _copy(kube, GATED)
        return entry if entry.get("phase") == "Failed" else None

    def secret_not_found() -> Mapping[str, Any] | None:
        deployed = condition(xr(kube, "ModelCache", GATED, NS), "Deployed")
        return deployed if deployed.get("reason") == "SecretNotFound" else None

    entry = eventually(f"{GATED}'s copy on {CLUSTER} Failed", copy_failed, TIMEOUT)
    FIGURES["model cache: Job Failed -> copy Failed (s)"] = round(time.monotonic() - job_failed, 1)
    assert str(entry.get("message", "")).startswith(says), entry
    deployed = eventually(f"{GATED}'s Deployed condition SecretNotFound", secret_not_found, TIMEOUT)
    assert deployed.get("status") == "False" and says in deployed.get("message", ""), deployed
    assert not ready(xr(kube, "ModelCache", GATED, NS))
    # A failed hydration keeps the claim.
    claim = workload.get("v1", "PersistentVolumeClaim", GATED_CLAIM, NS) or {}
    assert claim.get("metadata", {}).get("uid") == uid and not claim["metadata"].get("deletionTimestamp"), claim

    # Hydrating again: a new retry value is a new Job on the same claim.
    kube.patch(
        kinds.API_VERSION,
        "ModelCache",
        GATED,
        {"metadata": {"annotations": {HYDRATION_RETRY_ANNOTATION: "1"}}},
        namespace=NS,
    )

    def retried() -> list[str] | None:
        names = [str(j["metadata"]["name"]) for j in _jobs(workload, GATED)]
        return names if names and job_name not in names else None

    (new_job,) = eventually(f"a new hydration Job of {GATED}, {job_name} gone", retried, TIMEOUT)
    assert new_job != job_name
    claim = workload.get("v1", "PersistentVolumeClaim", GATED_CLAIM, NS) or {}
    assert claim.get("metadata", {}).get("uid") == uid and not claim["metadata"].get("deletionTimestamp"), claim
