"""A ModelBatchRun runs to Succeeded on spare GPUs, and a scheduled one lands as a CronJob (issue 28).

The scenario (``tests/e2e/batch/``): one cluster ``batch-a`` on workload server ``workload-a`` with one
node of two L4s and no serving replica; in namespace ``e2e-batch`` the one-shot Dedicated run
``embed-once`` (``runs.yaml``), then the scheduled run ``embed-nightly`` (``scheduled.yaml``).

What runs for real: the fleet scheduler placing the worker (the run's function), provider-kubernetes
creating the Job and observing its pods, and on the workload server the Job and CronJob controllers,
kube-scheduler (binding the worker's pod and allocating its DRA claim), the API server's priority
admission (the pod's priority from ``spec.priority``'s PriorityClass) and kwok as the kubelet.

What is simulated: no container runs, so no engine and no ``batch.py``. kwok holds the worker's pod
Running; the scenario then writes, as the pod annotation ``e2e.modelplane.ai/termination-message``,
the report the pod's program writes for an input of three requests of which one failed, and kwok's
stage ``e2e-batch-pod-report`` (``tests/e2e/kwok/stages.yaml``) ends the pod with exit 0 and that
text as the reporting container's termination message, as the kubelet would from
``/dev/termination-log``. The result contract is read from there by the run, through
provider-kubernetes, exactly as from a real pod. The PriorityClass is created by the scenario, as a
cluster admin would (docs/batch.md).

1. Placed and running: the run is placed on ``batch-a`` pool ``l4`` (phase Running once its pod
   runs), its Job's pod bound by kube-scheduler, its claim allocated, its priority the class's.
2. Succeeded: the pod ends with the report, the Job controller marks the Job Complete, and the run
   is Succeeded and Ready with ``status.requestCounts`` and ``status.output`` from the report.
3. Scheduled: the scheduled run's CronJob is on ``workload-a`` with the run's schedule,
   ``concurrencyPolicy: Forbid`` (the default) and its history limits; the run is Ready and Scheduled.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.names import BATCH_REPORTER_ANNOTATION, BATCH_RUN_LABEL, batch_job_name, batch_label
from tests.e2e.figures import FIGURES, Stopwatch
from tests.e2e.kube import Kube, Manifest, condition, is_true
from tests.e2e.plane import CROSSPLANE_NAMESPACE, Plane
from tests.e2e.world import OBJECT, cluster_gone, conditions, eventually, ready, wait_condition, xr

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent / "batch"
NS = "e2e-batch"
CLUSTER, POOL, WORKLOAD = "batch-a", "l4", "workload-a"
SECRET = "batch-a-kubeconfig"  # noqa: S105 - a Secret's name
RUN, NIGHTLY = "embed-once", "embed-nightly"
JOB = batch_job_name(RUN, scheduled=False)
CRON_JOB = batch_job_name(NIGHTLY, scheduled=True)
# What the scenario creates on workload-a as the cluster's admin: the class spec.priority names.
PRIORITY_CLASS_NAME, PRIORITY_VALUE = "e2e-batch-low", -10
PRIORITY_CLASS: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": PRIORITY_CLASS_NAME},
    "value": PRIORITY_VALUE,
    "preemptionPolicy": "Never",
    "description": "Batch work below serving pods (tests/e2e/test_9_batch.py).",
}
# The stand-in for the pod's program ending: kwok's e2e-batch-pod-report stage copies this annotation
# into the reporting container's termination message.
MESSAGE_ANNOTATION = "e2e.modelplane.ai/termination-message"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
# A chain of objects (the run, its worker Object, the pods collection's Objects), each woken by a
# watch or a 10 s poll (Crossplane's and provider-kubernetes'), on two loaded cores.
TIMEOUT = 240.0


@dataclass
class Scenario:
    """The running fleet and what one step leaves for the next."""

    plane: Plane
    watch: Stopwatch
    pod: str = ""

    @property
    def workload(self) -> Kube:
        return self.plane.workloads[WORKLOAD].kube


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((HERE / name).read_text()) if d]


def _spec(name: str) -> Mapping[str, Any]:
    (doc,) = (d for f in ("runs.yaml", "scheduled.yaml") for d in _docs(f) if d["metadata"]["name"] == name)
    spec: Mapping[str, Any] = doc["spec"]
    return spec


@pytest.fixture(scope="module")
def scenario(plane: Plane) -> Iterator[Scenario]:
    """The cluster Ready and the PriorityClass created; then the one-shot run applied."""
    plane.connect(CLUSTER, WORKLOAD, SECRET)
    workload = plane.workloads[WORKLOAD].kube
    platform = _docs("platform.yaml")
    try:
        workload.apply(PRIORITY_CLASS)
        plane.kube.kubectl(["apply", "-f", str(HERE / "platform.yaml")])
        wait_condition(plane.kube, "InferenceCluster", CLUSTER, None, "Ready", timeout=TIMEOUT)
        watch = Stopwatch("batch run")
        plane.kube.kubectl(["apply", "-f", str(HERE / "runs.yaml")])
        yield Scenario(plane, watch)
    finally:
        _clean_up(plane, workload, platform)


def _clean_up(plane: Plane, workload: Kube, platform: list[dict[str, Any]]) -> None:
    """The runs first, their Job and CronJob gone from the cluster; then the cluster and the rest."""
    kube = plane.kube
    for run in (RUN, NIGHTLY):
        kube.delete(kinds.API_VERSION, "ModelBatchRun", run, NS)
    eventually(
        f"the runs' Job and CronJob to leave {WORKLOAD}",
        lambda: not workload.get("batch/v1", "Job", JOB, NS) and not workload.get("batch/v1", "CronJob", CRON_JOB, NS),
        TIMEOUT,
    )
    eventually(
        "the runs' Objects to go",
        lambda: not [o for o in kube.list(*OBJECT, NS) if o["metadata"].get("labels", {}).get(BATCH_RUN_LABEL)],
        TIMEOUT,
    )
    for doc in reversed(platform):
        kube.delete(doc["apiVersion"], doc["kind"], doc["metadata"]["name"], doc["metadata"].get("namespace"))
    kube.delete("v1", "Namespace", NS)
    # The kubeconfig last: provider-kubernetes needs it to delete what the cluster put on workload-a.
    cluster_gone(kube, CLUSTER)
    kube.delete("v1", "Secret", SECRET, CROSSPLANE_NAMESPACE)
    workload.delete("scheduling.k8s.io/v1", "PriorityClass", PRIORITY_CLASS_NAME)


def _in_phase(kube: Kube, run: str, phase: str) -> Manifest | None:
    found = xr(kube, "ModelBatchRun", run, NS)
    return found if (found or {}).get("status", {}).get("phase") == phase else None


def _job_pods(workload: Kube, job: str) -> list[Manifest]:
    return workload.list("v1", "Pod", NS, labels={JOB_NAME_LABEL: job})


def _running_pod(workload: Kube) -> Manifest | None:
    """The worker Job's one pod, once bound to a node and Running (kwok holds it there); else None."""
    pods = _job_pods(workload, JOB)
    if len(pods) != 1 or pods[0].get("status", {}).get("phase") != "Running":
        return None
    return pods[0]


def _allocated(workload: Kube, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The devices kube-scheduler allocated to the pod's ResourceClaims."""
    out: list[Mapping[str, Any]] = []
    for entry in pod.get("status", {}).get("resourceClaimStatuses") or []:
        claim = workload.get("resource.k8s.io/v1", "ResourceClaim", str(entry.get("resourceClaimName")), NS) or {}
        out += claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results") or []
    return out


def test_dedicated_run_is_placed_on_spare_gpus_and_runs(scenario: Scenario) -> None:
    kube, workload, watch = scenario.plane.kube, scenario.workload, scenario.watch
    wait_condition(kube, "ModelBatchRun", RUN, NS, "Scheduled", timeout=TIMEOUT)
    watch.mark("Scheduled")
    # Its Job on the cluster, its pod bound by kube-scheduler to the pool's node and Running (kwok).
    pod = eventually(f"{JOB}'s pod on {WORKLOAD}, bound and Running", lambda: _running_pod(workload), TIMEOUT)
    scenario.pod = str(pod["metadata"]["name"])
    watch.mark("worker pod Running")
    job = workload.get("batch/v1", "Job", JOB, NS) or {}
    assert job["metadata"]["labels"][BATCH_RUN_LABEL] == batch_label(RUN), job["metadata"]
    assert job["spec"]["backoffLimit"] == _spec(RUN)["retries"], job["spec"]
    assert job["spec"]["activeDeadlineSeconds"] == 3600, job["spec"]
    assert pod["spec"]["nodeName"] == f"{CLUSTER}-{POOL}-0", pod["spec"]
    assert pod["spec"]["nodeSelector"] == {"modelplane.ai/pool": POOL}, pod["spec"]
    # The priority admission resolved spec.priority's class: below every serving pod (0 when they have none).
    assert pod["spec"]["priorityClassName"] == PRIORITY_CLASS_NAME, pod["spec"]
    assert pod["spec"]["priority"] == PRIORITY_VALUE, pod["spec"]
    devices = _allocated(workload, pod)
    assert len(devices) == 1 and devices[0].get("driver") == "gpu.nvidia.com", devices
    assert pod["metadata"]["annotations"][BATCH_REPORTER_ANNOTATION] == "vllm", pod["metadata"]

    # The run says where it is and that it runs.
    found = eventually(f"{RUN} Running", lambda: _in_phase(kube, RUN, "Running"), TIMEOUT)
    watch.mark("Running")
    assert found["status"]["cluster"] == CLUSTER and found["status"]["pool"] == POOL, found["status"]
    message = condition(found, "Scheduled").get("message", "")
    assert f"Job on InferenceCluster {CLUSTER}, pool {POOL}" in message, message
    assert not ready(found)


def test_dedicated_run_succeeds_with_the_workers_counts(scenario: Scenario) -> None:
    if not scenario.pod:
        pytest.skip("needs the run's worker running (test_dedicated_run_is_placed_on_spare_gpus_and_runs)")
    kube, workload, watch = scenario.plane.kube, scenario.workload, scenario.watch
    spec = _spec(RUN)
    report = {
        "total": 3,
        "completed": 2,
        "failed": 1,
        "results": spec["output"]["uri"],
        "errors": spec["output"]["errorsUri"],
    }
    # The program ends (simulated): kwok ends the pod with the report as its termination message.
    ended = time.monotonic()
    text = json.dumps(report, sort_keys=True)
    workload.patch("v1", "Pod", scenario.pod, {"metadata": {"annotations": {MESSAGE_ANNOTATION: text}}}, namespace=NS)

    def complete() -> Manifest | None:
        found = workload.get("batch/v1", "Job", JOB, NS)
        return found if is_true(found, "Complete") else None

    job = eventually(f"Job {JOB} Complete (the Job controller)", complete, TIMEOUT)
    watch.mark("Job Complete")
    FIGURES["batch run: pod exit -> Job Complete (s)"] = round(time.monotonic() - ended, 1)
    assert job["status"].get("succeeded") == 1, job["status"]
    (pod,) = _job_pods(workload, JOB)
    (reporter,) = (s for s in pod["status"]["containerStatuses"] if s["name"] == "vllm")
    assert reporter["state"]["terminated"]["message"] == text, reporter

    # The run Succeeded (from the Job), then its counts and output from the worker's report (from the pod,
    # whose Observe-only Object provider-kubernetes polls apart from the Job's).
    completed = time.monotonic()

    def reported() -> Manifest | None:
        found = _in_phase(kube, RUN, "Succeeded")
        return found if found and found["status"].get("requestCounts") else None

    try:
        eventually(f"{RUN} Succeeded", lambda: _in_phase(kube, RUN, "Succeeded"), TIMEOUT)
        watch.mark("Succeeded")
        FIGURES["batch run: Job Complete -> run Succeeded (s)"] = round(time.monotonic() - completed, 1)
        found = eventually(f"{RUN}'s status.requestCounts", reported, TIMEOUT)
    except TimeoutError as err:
        run = xr(kube, "ModelBatchRun", RUN, NS) or {}
        msg = f"{err}; status {run.get('status', {})!r}, its conditions: {conditions(run)}"
        raise TimeoutError(msg) from None
    watch.mark("requestCounts reported")
    FIGURES["batch run: Job Complete -> requestCounts (s)"] = round(time.monotonic() - completed, 1)
    status = found["status"]
    assert status["requestCounts"] == {"total": 3, "completed": 2, "failed": 1}, status
    assert status["output"] == {"results": report["results"], "errors": report["errors"]}, status
    assert status["startedAt"] and status["finishedAt"] and status["startedAt"] <= status["finishedAt"], status
    wait_condition(kube, "ModelBatchRun", RUN, NS, "Ready", timeout=TIMEOUT)
    # A finished Job is only observed from now on: never created again once the cluster deletes it.
    (worker,) = [o for o in kube.list(*OBJECT, NS) if o["metadata"]["name"] == f"{RUN}-worker"]
    eventually(
        f"{RUN}'s worker Object observe-and-delete only",
        lambda: (
            (kube.get(*OBJECT, worker["metadata"]["name"], NS) or {}).get("spec", {}).get("managementPolicies")
            == ["Observe", "Delete"]
        ),
        TIMEOUT,
    )


def test_scheduled_run_creates_its_cron_job(scenario: Scenario) -> None:
    kube, workload = scenario.plane.kube, scenario.workload
    watch = Stopwatch("scheduled batch run")
    kube.kubectl(["apply", "-f", str(HERE / "scheduled.yaml")])
    spec = _spec(NIGHTLY)
    cron_job = eventually(
        f"CronJob {CRON_JOB} on {WORKLOAD}", lambda: workload.get("batch/v1", "CronJob", CRON_JOB, NS), TIMEOUT
    )
    watch.mark("CronJob on the cluster")
    assert cron_job["spec"]["schedule"] == spec["schedule"], cron_job["spec"]
    assert cron_job["spec"]["concurrencyPolicy"] == "Forbid", cron_job["spec"]
    assert cron_job["spec"]["successfulJobsHistoryLimit"] == spec["history"], cron_job["spec"]
    assert cron_job["spec"]["failedJobsHistoryLimit"] == spec["history"], cron_job["spec"]
    template = cron_job["spec"]["jobTemplate"]["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"modelplane.ai/pool": POOL}, template["spec"]
    assert template["metadata"]["labels"][BATCH_RUN_LABEL] == batch_label(NIGHTLY), template["metadata"]
    # Ready once its CronJob exists; Scheduled (no run is active) on the cluster it was placed on.
    found = wait_condition(kube, "ModelBatchRun", NIGHTLY, NS, "Ready", timeout=TIMEOUT)
    watch.mark("Ready")
    assert found["status"]["phase"] == "Scheduled", found["status"]
    assert found["status"]["cluster"] == CLUSTER and found["status"]["pool"] == POOL, found["status"]
    message = condition(found, "Scheduled").get("message", "")
    assert f"CronJob on InferenceCluster {CLUSTER}, pool {POOL}" in message, message
    assert "waiting for the next scheduled run" in message, message
