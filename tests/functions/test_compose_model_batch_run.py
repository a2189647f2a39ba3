"""compose-model-batch-run: where a run goes, what lands on its cluster, what its status says, and each bad input.

Checked as a user would: the cluster and pool of the worker, the Job or CronJob and the pod it runs
(command, GPUs, files, scheduler labels), the phase, counts and times the status shows from what the
cluster reports, and the Scheduled condition's reason and message, which names the field at fault.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest
import xrds  # the validation harness (tests/functions/conftest.py puts it on the path)

from compose_model_batch_run.worker import _composed_mount
from modelplane.backends.model import CacheMount
from tests.functions.batch_fixtures import (
    AMPERE,
    T0,
    T1,
    TEMPLATE,
    World,
    as_observed,
    call,
    cluster,
    condition,
    dedicated,
    endpoint,
    env,
    job_spec,
    job_status,
    manifest,
    model_cache,
    model_pool,
    objects,
    other_run,
    pod,
    pod_spec,
    ready,
    replica,
    report,
    service,
    status,
    via_service,
    warnings,
)

_FULL = {"0": 2}  # every GPU of the pool held by serving replicas (as its cluster publishes it)
_HALF = {"0": 1, "8": 1}
_IDLE = {"8": 2}


# --- Dedicated: where the worker goes -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("clusters", "runs", "spec", "want"),
    [
        pytest.param((cluster("east", free=_IDLE),), (), {}, ("east", "h100"), id="idle-pool"),
        pytest.param(
            (cluster("east", free=_FULL), cluster("west", free=_HALF)),
            (),
            {},
            ("west", "h100"),
            id="only-gpus-no-serving-replica-holds",
        ),
        pytest.param(
            (cluster("east", free=_HALF), cluster("west", free=_HALF)),
            (other_run("embed", cluster_name="east"),),
            {},
            ("west", "h100"),
            id="another-runs-worker-holds-the-rest",
        ),
        pytest.param(
            (cluster("east", free=_HALF),),
            (other_run("weekly", cluster_name="east", phase="Scheduled", schedule="@weekly"),),
            {},
            ("east", "h100"),
            id="an-idle-scheduled-run-holds-nothing",
        ),
        pytest.param(
            (cluster("east", free=_IDLE, labels={"tier": "prod"}), cluster("west", free=_IDLE)),
            (),
            {"clusterSelector": {"matchLabels": {"tier": "batch"}}},
            ("west", "h100"),
            id="cluster-selector",
        ),
    ],
)
def test_a_dedicated_worker_takes_spare_gpus(
    clusters: tuple[dict[str, Any], ...], runs: tuple[dict[str, Any], ...], spec: dict[str, Any], want: tuple[str, str]
) -> None:
    got = call(dedicated(**spec), World(clusters=clusters, runs=runs))
    assert (status(got)["cluster"], status(got)["pool"]) == want
    assert condition(got)["status"] == "STATUS_CONDITION_TRUE"
    assert status(got)["phase"] == "Scheduled"
    obj = objects(got)["worker"]
    assert obj["spec"]["providerConfigRef"]["name"] == f"{want[0]}-config"
    assert pod_spec(manifest(got, "worker"))["nodeSelector"] == {"modelplane.ai/pool": want[1]}


@pytest.mark.parametrize(
    ("clusters", "runs", "spec", "reason", "says"),
    [
        pytest.param(
            (cluster("east", free=_FULL), cluster("west", free=_FULL)),
            (),
            {},
            "InsufficientCapacity",
            "placed 0 of 1: nightly-0: InsufficientCapacity",
            id="every-gpu-serves",
        ),
        pytest.param(
            (cluster("east", free=_HALF),),
            (other_run("embed", cluster_name="east"),),
            {},
            "InsufficientCapacity",
            "placed 0 of 1: nightly-0: InsufficientCapacity",
            id="the-last-gpus-run-another-batch",
        ),
        pytest.param(
            (cluster("east", free=_IDLE),),
            (),
            {"clusterSelector": {"matchLabels": {"tier": "gold"}}},
            "NoMatchingClusters",
            "placed 0 of 1: nightly-0: NoMatchingClusters",
            id="no-cluster-selected",
        ),
        pytest.param(
            (cluster("east", free=_IDLE),),
            (),
            {"nodeSelector": {"cel": AMPERE}},
            "NoMatchingPools",
            "placed 0 of 1: nightly-0: NoMatchingPools",
            id="no-pool-has-the-gpu",
        ),
        pytest.param(
            (cluster("east", free=_IDLE),),
            (),
            {"workers": {"count": 1, "topology": {"tensor": 16, "dataLocal": 1}, "template": TEMPLATE}},
            "NoMatchingPools",
            "placed 0 of 1: nightly-0: NoMatchingPools",
            id="a-shape-no-node-has",
        ),
    ],
)
def test_a_worker_no_pool_fits_is_pending_like_a_deployment(
    clusters: tuple[dict[str, Any], ...], runs: tuple[dict[str, Any], ...], spec: dict[str, Any], reason: str, says: str
) -> None:
    got = call(dedicated(**spec), World(clusters=clusters, runs=runs))
    scheduled = condition(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_FALSE", reason)
    assert scheduled["message"].startswith(says)
    assert status(got)["phase"] == "Pending"
    assert objects(got) == {}
    assert not ready(got)


def test_a_placed_worker_stays_where_it_is() -> None:
    first = call(dedicated(), World(clusters=(cluster("east", free=_HALF), cluster("west", free=_FULL))))
    assert status(first)["cluster"] == "east"
    # East fills up with serving replicas, west frees up: the worker stays (a Job does not move).
    world = World(
        clusters=(cluster("east", free=_FULL), cluster("west", free=_IDLE)), observed=as_observed(objects(first))
    )
    got = call(dedicated(), world)
    assert status(got)["cluster"] == "east"
    assert objects(got)["worker"]["spec"]["providerConfigRef"]["name"] == "east-config"
    assert "where its worker was placed" in condition(got)["message"]


def test_a_worker_whose_cluster_is_gone_is_kept() -> None:
    first = call(dedicated(), World(clusters=(cluster("east", free=_IDLE),)))
    got = call(dedicated(), World(clusters=(cluster("west", free=_IDLE),), observed=as_observed(objects(first))))
    assert set(objects(got)) == set(objects(first))
    assert objects(got)["worker"]["spec"]["providerConfigRef"]["name"] == "east-config"
    scheduled = condition(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_FALSE", "ClusterNotFound")
    assert "InferenceCluster east" in scheduled["message"]


# --- Dedicated: the Job and its pod --------------------------------------------------------------------


def test_a_one_shot_run_is_a_job_running_vllm_run_batch() -> None:
    run = dedicated(
        deadline="6h",
        retries=2,
        ttlAfterFinished="24h",
        workers={"count": 1, "topology": {"tensor": 2}, "template": TEMPLATE},
    )
    got = call(run)
    job = manifest(got, "worker")
    assert (job["kind"], job["metadata"]["name"], job["metadata"]["namespace"]) == ("Job", "nightly", "ml")
    assert job["metadata"]["finalizers"] == ["foregroundDeletion"]  # its pods go with it, GPUs freed
    spec = job_spec(job)
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"], spec["ttlSecondsAfterFinished"]) == (2, 21600, 86400)
    pod = pod_spec(job)
    assert pod["restartPolicy"] == "Never"
    engine = pod["containers"][0]
    assert engine["command"] == [
        "python3", "/modelplane/scripts/batch.py", "worker", "--",
        "vllm", "run-batch", "-i", "/modelplane/data/input.jsonl", "-o", "/modelplane/data/output.jsonl",
        "--model", "BAAI/bge-m3", "--max-model-len=8192",
    ]  # fmt: skip
    assert "args" not in engine
    assert engine["resources"]["claims"] == [{"name": "accelerators"}]
    assert engine["terminationMessagePolicy"] == "File"
    assert env(engine)["MODELPLANE_BATCH_OUTPUT"] == "pvc://results/nightly/out.jsonl"
    assert {"name": "modelplane-batch-pvc-0", "persistentVolumeClaim": {"claimName": "results"}} in pod["volumes"]
    claim = manifest(got, "claim")
    (request,) = claim["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == 2
    assert pod["resourceClaims"] == [{"name": "accelerators", "resourceClaimTemplateName": claim["metadata"]["name"]}]
    assert job["spec"]["template"]["metadata"]["annotations"]["modelplane.ai/batch-reporter"] == "vllm"
    assert "modelplane.ai/replica" not in job["spec"]["template"]["metadata"]["labels"]
    assert "batch.py" in manifest(got, "scripts")["data"]
    assert "jobs" not in objects(got)  # a one-shot run observes its pods only


def test_an_engine_with_its_own_command_runs_under_the_program() -> None:
    template = {
        "spec": {
            "containers": [
                {"name": "sglang", "image": "lmsysorg/sglang:v0.5", "command": ["my-batch"], "args": ["--fast"]}
            ]
        }
    }
    got = call(dedicated(workers={"count": 1, "topology": {"tensor": 1}, "template": template}))
    engine = pod_spec(manifest(got, "worker"))["containers"][0]
    assert engine["command"] == ["python3", "/modelplane/scripts/batch.py", "worker", "--", "my-batch", "--fast"]
    assert env(engine)["MODELPLANE_BATCH_INPUT_FILE"] == "/modelplane/data/input.jsonl"


@pytest.mark.parametrize(
    ("files", "init", "sidecar", "engine_env"),
    [
        pytest.param(
            {"input": {"uri": "s3://corpus/in.jsonl", "secretRef": {"name": "aws"}}},
            ["stage-in"],
            [],
            {"MODELPLANE_BATCH_INPUT_FILE": "/modelplane/data/input.jsonl"},
            id="s3-input-staged-by-an-init-container",
        ),
        pytest.param(
            {
                "output": {
                    "uri": "s3://corpus/out.jsonl",
                    "errorsUri": "s3://corpus/err.jsonl",
                    "secretRef": {"name": "aws"},
                }
            },
            [],
            ["stage-out"],
            {"MODELPLANE_BATCH_ERRORS": "s3://corpus/err.jsonl"},
            id="s3-output-uploaded-by-a-container",
        ),
        pytest.param(
            {"input": {"uri": "pvc://corpus/2026/in.jsonl"}},
            [],
            [],
            {"MODELPLANE_BATCH_INPUT_FILE": "/modelplane/pvc/corpus/2026/in.jsonl"},
            id="pvc-input-read-where-mounted",
        ),
        pytest.param(
            {"input": {"uri": "https://data.example.com/in.jsonl", "secretRef": {"name": "token"}}},
            [],
            [],
            {"MODELPLANE_BATCH_INPUT_AUTHORIZATION": {"secretKeyRef": {"name": "token", "key": "authorization"}}},
            id="https-input-with-a-token",
        ),
    ],
)
def test_files_reach_the_pod_as_their_scheme_says(
    files: dict[str, Any], init: list[str], sidecar: list[str], engine_env: dict[str, Any]
) -> None:
    pod = pod_spec(manifest(call(dedicated(**files)), "worker"))
    assert [c["name"] for c in pod.get("initContainers", [])] == init
    assert [c["name"] for c in pod["containers"][1:]] == sidecar
    for staging in [*pod.get("initContainers", []), *pod["containers"][1:]]:
        assert staging["envFrom"] == [{"secretRef": {"name": "aws"}}]
    assert engine_env.items() <= env(pod["containers"][0]).items()


def test_pvc_claims_are_read_only_unless_written() -> None:
    run = dedicated(input={"uri": "pvc://corpus/in.jsonl"}, output={"uri": "pvc://results/out.jsonl"})
    mounts = {m["mountPath"]: m for m in pod_spec(manifest(call(run), "worker"))["containers"][0]["volumeMounts"]}
    assert mounts["/modelplane/pvc/corpus"].get("readOnly") is True
    assert "readOnly" not in mounts["/modelplane/pvc/results"]


# --- schedules ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "policy", "history"),
    [
        pytest.param({"schedule": "0 2 * * *"}, "Forbid", 3, id="nightly-forbid-by-default"),
        pytest.param({"schedule": "@hourly", "concurrencyPolicy": "Replace", "history": 5}, "Replace", 5, id="hourly"),
    ],
)
def test_a_schedule_is_a_cronjob(spec: dict[str, Any], policy: str, history: int) -> None:
    got = call(dedicated(**spec))
    cron = manifest(got, "worker")
    assert cron["kind"] == "CronJob"
    assert cron["spec"]["schedule"] == spec["schedule"]
    assert cron["spec"]["concurrencyPolicy"] == policy
    assert (cron["spec"]["successfulJobsHistoryLimit"], cron["spec"]["failedJobsHistoryLimit"]) == (history, history)
    assert cron["spec"]["jobTemplate"]["metadata"]["labels"]["modelplane.ai/batch-run"] == "nightly"
    assert len(cron["metadata"]["name"]) <= 52
    assert objects(got)["jobs"]["spec"]["observeObjects"]["kind"] == "Job"


def test_a_scheduled_run_lists_its_runs_newest_first() -> None:
    first = call(dedicated(schedule="0 2 * * *"))
    cron_status = {"active": [{"name": "nightly-29700120"}], "lastScheduleTime": "2026-11-29T02:00:00Z"}
    world = World(
        observed=as_observed(objects(first), remote={"worker": cron_status}),
        jobs=(
            _job("nightly-29698680", job_status("complete", startTime="2026-11-27T02:00:00Z")),
            _job("nightly-29700120", job_status("running", startTime="2026-11-29T02:00:00Z")),
            _job("nightly-29699400", job_status("failed", startTime="2026-11-28T02:00:00Z")),
        ),
        pods=(
            pod(
                "nightly-29698680",
                message=report(100, 100, 0, results="pvc://results/nightly/out.jsonl"),
                start="2026-11-27T02:00:05Z",
            ),
            pod("nightly-29699400", message=report(100, 0, 100), phase="Failed", start="2026-11-28T02:00:05Z"),
        ),
    )
    got = call(dedicated(schedule="0 2 * * *"), world)
    st = status(got)
    assert st["phase"] == "Running"
    assert [(r["job"], r["phase"]) for r in st["runs"]] == [
        ("nightly-29700120", "Running"),
        ("nightly-29699400", "Failed"),
        ("nightly-29698680", "Succeeded"),
    ]
    # The newest finished run's counts and times are the run's.
    assert st["requestCounts"] == {"total": 100, "completed": 0, "failed": 100}
    assert (st["startedAt"], st["finishedAt"]) == ("2026-11-28T02:00:00Z", T1)
    assert st["runs"][2]["requestCounts"] == {"total": 100, "completed": 100, "failed": 0}
    assert st["lastScheduleTime"] == "2026-11-29T02:00:00Z"
    assert ready(got)


def _job(name: str, job_st: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ml", "labels": {"modelplane.ai/batch-run": "nightly"}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "status": job_st}


# --- the scheduler and priority on the workload cluster -------------------------------------------------


@pytest.mark.parametrize(
    ("scheduler", "job_labels", "pod_fields", "pod_labels"),
    [
        pytest.param(
            {"type": "Kueue", "kueue": {"localQueueName": "batch"}},
            {"kueue.x-k8s.io/queue-name": "batch", "kueue.x-k8s.io/priority-class": "batch-low"},
            {},
            {},
            id="kueue-queue-and-workload-priority",
        ),
        pytest.param(
            {"type": "KAI", "kai": {"queue": "research"}},
            {"kai.scheduler/queue": "research"},
            {"schedulerName": "kai-scheduler", "priorityClassName": "batch-low"},
            {"kai.scheduler/queue": "research"},
            id="kai-queue-and-priority-class",
        ),
        pytest.param(None, {}, {"priorityClassName": "batch-low"}, {}, id="default-scheduler-priority-class"),
    ],
)
def test_priority_on_the_workload_cluster(
    scheduler: dict[str, Any] | None, job_labels: dict[str, str], pod_fields: dict[str, str], pod_labels: dict[str, str]
) -> None:
    got = call(dedicated(priority="batch-low"), World(clusters=(cluster("east", free=_IDLE, scheduler=scheduler),)))
    job = manifest(got, "worker")
    labels = {k: v for k, v in job["metadata"]["labels"].items() if k != "modelplane.ai/batch-run"}
    assert labels == job_labels
    pod = pod_spec(job)
    assert {k: pod[k] for k in ("schedulerName", "priorityClassName") if k in pod} == pod_fields
    template_labels = job["spec"]["template"]["metadata"]["labels"]
    assert pod_labels.items() <= template_labels.items()
    assert "suspend" not in job["spec"]  # Kueue's webhook suspends it; writing it would fight Kueue


def test_a_cluster_scheduler_without_its_queue_is_named() -> None:
    world = World(clusters=(cluster("east", free=_IDLE, scheduler={"type": "Kueue"}),))
    scheduled = condition(call(dedicated(), world))
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_FALSE", "ClusterNotReady")
    assert scheduled["message"] == (
        "InferenceCluster east: spec.scheduler.kueue.localQueueName: required when scheduler.type is Kueue"
    )


# --- Dedicated: spec.modelCacheRef ----------------------------------------------------------------------

_TWO_IDLE = (cluster("east", free=_IDLE), cluster("west", free=_IDLE))
_CACHE = {"name": "bge-weights"}


def _mounts(got: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The worker pod's cache volume and its first container's cache mount."""
    pod = pod_spec(manifest(got, "worker"))
    volumes = [v for v in pod["volumes"] if v["name"] == "model-cache"]
    mounts = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "model-cache"]
    return volumes, mounts


@pytest.mark.parametrize(
    ("ref", "cache", "want_cluster", "want_mount"),
    [
        pytest.param(
            _CACHE, model_cache({"west": "Ready"}), "west", "/models/bge-weights", id="required-goes-to-the-copy"
        ),
        pytest.param(
            {**_CACHE, "mountPath": "/weights"},
            model_cache({"east": "Hydrating", "west": "Ready"}),
            "west",
            "/weights",
            id="required-not-where-it-hydrates",
        ),
        pytest.param(
            {**_CACHE, "policy": "Preferred"},
            model_cache({"west": "Ready"}),
            "west",
            "/models/bge-weights",
            id="preferred-ranks-the-copy-first",
        ),
        pytest.param(
            {**_CACHE, "policy": "Preferred"}, model_cache({}), "east", None, id="preferred-starts-without-a-copy"
        ),
    ],
)
def test_a_worker_mounts_the_caches_copy_where_it_is_ready(
    ref: dict[str, Any], cache: dict[str, Any], want_cluster: str, want_mount: str | None
) -> None:
    got = call(dedicated(modelCacheRef=ref), World(clusters=_TWO_IDLE, cache=cache))
    assert status(got)["cluster"] == want_cluster
    volumes, mounts = _mounts(got)
    if want_mount is None:
        assert (volumes, mounts) == ([], [])
        return
    assert volumes == [
        {"name": "model-cache", "persistentVolumeClaim": {"claimName": "modelcache-bge-weights", "readOnly": True}}
    ]
    assert mounts == [{"name": "model-cache", "mountPath": want_mount, "readOnly": True}]


@pytest.mark.parametrize(
    ("cache", "says"),
    [
        pytest.param(
            None, "spec.modelCacheRef.name: ModelCache bge-weights not found in the run's namespace", id="missing"
        ),
        pytest.param(
            model_cache({"east": "Hydrating", "west": "Failed"}),
            "spec.modelCacheRef: ModelCache bge-weights has no Ready copy (east Hydrating, west Failed); "
            "policy Required keeps the worker off clusters without one",
            id="no-ready-copy",
        ),
        pytest.param(
            model_cache({"east": "Ready"}, storage="NodeLocal", claim=""),
            "spec.modelCacheRef: ModelCache bge-weights has storage type NodeLocal, which a batch worker cannot mount",
            id="node-local",
        ),
    ],
)
def test_a_required_cache_without_a_copy_keeps_the_worker_off_every_cluster(
    cache: dict[str, Any] | None, says: str
) -> None:
    got = call(dedicated(modelCacheRef=_CACHE), World(clusters=_TWO_IDLE, cache=cache))
    scheduled = condition(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_FALSE", "CacheNotReady")
    assert scheduled["message"] == says
    assert status(got)["phase"] == "Pending"
    assert objects(got) == {}


def test_a_required_cache_whose_copy_cluster_is_full_says_so() -> None:
    clusters = (cluster("east", free=_IDLE), cluster("west", free=_FULL))
    got = call(dedicated(modelCacheRef=_CACHE), World(clusters=clusters, cache=model_cache({"west": "Ready"})))
    scheduled = condition(got)
    assert scheduled["reason"] == "InsufficientCapacity"
    assert scheduled["message"].endswith("(only clusters with a Ready copy of ModelCache bge-weights: west)")


def test_a_composed_worker_keeps_its_mount_whatever_the_copy_does() -> None:
    run = dedicated(modelCacheRef=_CACHE)
    first = call(run, World(clusters=_TWO_IDLE, cache=model_cache({"west": "Ready"})))
    observed = as_observed(objects(first), remote={"worker": job_status("running")})
    # The copy is gone from west: the Job runs on as created (no new placement, no change of its pod).
    got = call(run, World(clusters=_TWO_IDLE, cache=model_cache({"west": "Failed"}), observed=observed))
    assert status(got)["cluster"] == "west"
    assert manifest(got, "worker") == manifest(first, "worker")
    assert warnings(got) == []


# --- Service mode ---------------------------------------------------------------------------------------

_ENDPOINTS = (
    endpoint("llm-0", replica="llm-0"),
    endpoint("llm-1", replica="llm-1"),
    endpoint("llm-2", replica="llm-2"),
)
_REPLICAS = (replica("llm-0", "east"), replica("llm-1", "west"), replica("llm-2", "west"))
_SERVICE_FLEET = (
    cluster("east", free=_FULL),
    cluster("west", free=_FULL, scheduler={"type": "Kueue", "kueue": {"localQueueName": "q"}}),
)


def test_a_service_run_posts_from_the_cluster_hosting_most_of_the_service() -> None:
    run = via_service(modelServiceRef={"name": "assistant", "apiKeySecretRef": {"name": "keys", "key": "batch"}})
    world = World(clusters=_SERVICE_FLEET, service=service(), endpoints=_ENDPOINTS, replicas=_REPLICAS)
    got = call(run, world)
    assert status(got)["cluster"] == "west"
    assert "pool" not in status(got)
    assert "claim" not in objects(got)  # a client holds no GPU
    job = manifest(got, "worker")
    assert set(job["metadata"]["labels"]) == {"modelplane.ai/batch-run"}  # never queued: it asks for no quota
    client = pod_spec(job)["containers"][0]
    assert client["image"] == "python:3.12.7-slim-bookworm"
    assert client["command"] == ["python3", "/modelplane/scripts/batch.py", "client"]
    got_env = env(client)
    assert got_env["MODELPLANE_BATCH_URL"] == "http://gw.example.com/ml/assistant/v1/chat/completions"
    assert got_env["MODELPLANE_BATCH_CONCURRENCY"] == "4"
    assert got_env["MODELPLANE_BATCH_API_KEY"] == {"secretKeyRef": {"name": "keys", "key": "batch"}}
    assert "2 Ready endpoint(s) of ModelService assistant" in condition(got)["message"]


def test_a_pool_endpoint_counts_for_the_cluster_its_label_names() -> None:
    endpoints = (endpoint("llm-east", cluster_label="east"), endpoint("llm-west", cluster_label="west", ready=False))
    world = World(clusters=_SERVICE_FLEET, service=service(("llm-east", "llm-west")), endpoints=endpoints)
    assert status(call(via_service(), world))["cluster"] == "east"


@pytest.mark.parametrize(
    ("world", "reason", "says"),
    [
        pytest.param(
            World(clusters=_SERVICE_FLEET),
            "ServiceNotFound",
            "spec.modelServiceRef.name: ModelService assistant not found",
            id="service-missing",
        ),
        pytest.param(
            World(
                clusters=_SERVICE_FLEET,
                service=service(),
                replicas=_REPLICAS,
                endpoints=tuple(endpoint(f"llm-{i}", replica=f"llm-{i}", ready=False) for i in range(3)),
            ),
            "NoReadyEndpoints",
            "spec.modelServiceRef.name: ModelService assistant has no Ready endpoint (3 matched, 0 Ready)",
            id="no-ready-endpoint",
        ),
        pytest.param(
            World(clusters=_SERVICE_FLEET, service=service(("saas",)), endpoints=(endpoint("saas"),)),
            "NoReadyEndpoints",
            "has no Ready endpoint (1 matched, 1 Ready, none on an InferenceCluster)",
            id="only-an-external-endpoint",
        ),
        pytest.param(
            World(clusters=_SERVICE_FLEET, service=service(address=""), endpoints=_ENDPOINTS, replicas=_REPLICAS),
            "WaitingForAddress",
            "ModelService assistant has no address yet",
            id="no-address-yet",
        ),
    ],
)
def test_a_service_run_without_a_ready_service_is_pending(world: World, reason: str, says: str) -> None:
    got = call(via_service(), world)
    scheduled = condition(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_FALSE", reason)
    assert says in scheduled["message"]
    assert status(got)["phase"] == "Pending"
    assert objects(got) == {}


# --- Service mode: requests marked low priority for the endpoint pickers ------------------------------

_POOL_ENDPOINTS = (endpoint("llm-east", cluster_label="east"), endpoint("llm-west", cluster_label="west"))


def _objectives(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: o for k, o in objects(got).items() if k.startswith("objective-")}


@pytest.mark.parametrize(
    ("pools", "want"),
    [
        pytest.param(
            (model_pool("llm", "east"), model_pool("llm", "west")),
            {"objective-east": ("east-config", -1, "llm"), "objective-west": ("west-config", -1, "llm")},
            id="below-callers-naming-no-objective",
        ),
        pytest.param(
            (model_pool("llm", "east", priority=10), model_pool("llm", "west", priority=-5)),
            {"objective-east": ("east-config", -1, "llm"), "objective-west": ("west-config", -6, "llm")},
            id="below-the-deployments-own-objective",
        ),
        pytest.param(
            (model_pool("llm", "east"), model_pool("other", "east"), model_pool("llm", "west")),
            {"objective-east": ("east-config", -1, "llm"), "objective-west": ("west-config", -1, "llm")},
            id="a-pool-the-service-does-not-reach-is-not-marked",
        ),
        pytest.param((), {}, id="no-pool-replica-mode-endpoints"),
    ],
)
def test_a_service_runs_requests_are_marked_below_every_pools_interactive_traffic(
    pools: tuple[dict[str, Any], ...], want: dict[str, tuple[str, int, str]]
) -> None:
    world = World(
        clusters=_SERVICE_FLEET,
        service=service(("llm-east", "llm-west")),
        endpoints=_POOL_ENDPOINTS,
        pools=pools,
    )
    got = call(via_service(), world)
    found = _objectives(got)
    assert {
        k: (
            o["spec"]["providerConfigRef"]["name"],
            o["spec"]["forProvider"]["manifest"]["spec"]["priority"],
            o["spec"]["forProvider"]["manifest"]["spec"]["poolRef"]["name"],
        )
        for k, o in found.items()
    } == want
    for obj in found.values():
        objective = obj["spec"]["forProvider"]["manifest"]
        assert objective["kind"] == "InferenceObjective" and objective["apiVersion"] == "llm-d.ai/v1alpha2"
        assert objective["metadata"]["name"] == "modelplane-batch-scoring"
        assert objective["metadata"]["namespace"] == "ml"
        assert objective["spec"]["poolRef"]["kind"] == "InferencePool"
    # The client names the objective in every request, whichever pool serves it.
    client = pod_spec(manifest(got, "worker"))["containers"][0]
    assert env(client)["MODELPLANE_BATCH_OBJECTIVE"] == "modelplane-batch-scoring"
    message = condition(got)["message"]
    if want:
        assert f"requests marked low priority on {len(want)} pool(s): llm on east (" in message
    else:
        assert "marked" not in message


def test_two_pools_of_the_service_on_one_cluster_mark_the_first() -> None:
    service_ = service(("a-east", "b-east"))
    endpoints = (endpoint("a-east", cluster_label="east"), endpoint("b-east", cluster_label="east"))
    pools = (model_pool("b", "east", priority=3), model_pool("a", "east", priority=7))
    got = call(via_service(), World(clusters=_SERVICE_FLEET, service=service_, endpoints=endpoints, pools=pools))
    (only,) = _objectives(got).values()
    assert only["spec"]["forProvider"]["manifest"]["spec"]["poolRef"]["name"] == "a"
    assert "not on b on east (another pool of the service on its cluster has the name)" in condition(got)["message"]


def test_a_dedicated_run_marks_nothing() -> None:
    got = call(dedicated())
    assert _objectives(got) == {}
    assert "MODELPLANE_BATCH_OBJECTIVE" not in env(pod_spec(manifest(got, "worker"))["containers"][0])


def test_an_objective_stays_until_the_run_is_deleted() -> None:
    pools = (model_pool("llm", "east"), model_pool("llm", "west"))
    world = World(clusters=_SERVICE_FLEET, service=service(("llm-east", "llm-west")), endpoints=_POOL_ENDPOINTS)
    first = call(via_service(), replace(world, pools=pools))
    observed = as_observed(objects(first), remote={"worker": job_status("running")})
    # The pool on west is not seen (gone, or its list did not read): the objective there stays, unchanged.
    fewer = call(via_service(), replace(world, pools=pools[:1], observed=observed))
    assert {k: o["spec"] for k, o in _objectives(fewer).items()} == {
        k: o["spec"] for k, o in _objectives(first).items()
    }
    # The service cannot be read: every objective composed stays as it is.
    gone = call(via_service(), World(clusters=_SERVICE_FLEET, observed=observed))
    assert {k: o["spec"] for k, o in _objectives(gone).items()} == {k: o["spec"] for k, o in _objectives(first).items()}


def test_a_service_run_ignores_its_priority_with_no_queue() -> None:
    world = World(clusters=_SERVICE_FLEET, service=service(), endpoints=_ENDPOINTS, replicas=_REPLICAS)
    job = manifest(call(via_service(priority="batch-low"), world), "worker")
    assert "priorityClassName" not in pod_spec(job)


# --- status from the worker's contract ------------------------------------------------------------------

_OK = report(1000, 998, 2, results="pvc://results/nightly/out.jsonl")


@dataclass(frozen=True)
class Want:
    """What the status says of a run."""

    phase: str
    says: str
    counts: dict[str, int] | None = None
    times: tuple[str | None, str | None] = (None, None)
    output: dict[str, str] | None = None


_RESULTS = {"results": "pvc://results/nightly/out.jsonl"}


@pytest.mark.parametrize(
    ("job", "pods", "want"),
    [
        pytest.param(
            job_status("suspended"),
            (),
            Want("Scheduled", "suspended: waiting for its queue to admit it"),
            id="kueue-has-not-admitted-it",
        ),
        pytest.param(
            job_status("pending"),
            (pod("nightly", phase="Pending", pending="0/4 nodes are available: insufficient gpu.nvidia.com"),),
            Want("Scheduled", "Unschedulable: 0/4 nodes are available", times=(T0, None)),
            id="pod-pending",
        ),
        pytest.param(
            job_status("running"),
            (pod("nightly", phase="Running"),),
            Want("Running", "is running", times=(T0, None)),
            id="running",
        ),
        pytest.param(
            job_status("complete"),
            (pod("nightly", message=_OK),),
            Want("Succeeded", "completed", {"total": 1000, "completed": 998, "failed": 2}, (T0, T1), _RESULTS),
            id="succeeded-with-counts",
        ),
        pytest.param(
            job_status("complete"),
            (pod("nightly", message="done!"),),
            Want("Succeeded", "completed", None, (T0, T1), _RESULTS),
            id="an-engine-that-reports-nothing",
        ),
        pytest.param(
            job_status("failed", failed=4),
            (pod("nightly", message=report(1000, 0, 1000), phase="Failed", last=True),),
            Want("Failed", "BackoffLimitExceeded", {"total": 1000, "completed": 0, "failed": 1000}, (T0, T1)),
            id="failed",
        ),
        pytest.param(
            job_status("pending", failed=1),
            (pod("nightly", phase="Pending", pending="0/4 nodes are available: insufficient gpu.nvidia.com"),),
            Want("Scheduled", "waits to start (1 failed attempt(s)): pod nightly-x0", times=(T0, None)),
            id="preempted-and-waiting-for-the-gpus-again",
        ),
        pytest.param(
            job_status("expired"),
            (pod("nightly", phase="Running"),),
            Want("Expired", "DeadlineExceeded", None, (T0, T1)),
            id="past-its-deadline",
        ),
    ],
)
def test_the_status_follows_the_job_and_the_workers_report(
    job: dict[str, Any], pods: tuple[dict[str, Any], ...], want: Want
) -> None:
    first = call(dedicated())
    got = call(dedicated(), World(observed=as_observed(objects(first), remote={"worker": job}), pods=pods))
    st = status(got)
    assert st["phase"] == want.phase
    assert st.get("requestCounts") == want.counts
    assert (st.get("startedAt"), st.get("finishedAt")) == want.times
    assert st.get("output") == want.output
    assert want.says in condition(got)["message"]
    assert ready(got) == (want.phase == "Succeeded")
    assert bool([w for w in warnings(got) if want.says in w]) == (want.phase in ("Failed", "Expired"))


def test_a_finished_job_is_only_observed_then() -> None:
    first = call(dedicated(ttlAfterFinished="1h"))
    done = World(observed=as_observed(objects(first), remote={"worker": job_status("complete")}))
    got = call(dedicated(ttlAfterFinished="1h"), done)
    # Kubernetes deletes it after ttlAfterFinished: it must not be created again (and the batch run again).
    assert objects(got)["worker"]["spec"]["managementPolicies"] == ["Observe", "Delete"]


def test_a_finished_run_keeps_its_status_once_its_job_is_gone() -> None:
    first = call(dedicated())
    observed = as_observed(objects(first))
    del observed["worker"]["status"]["atProvider"]  # the Job was deleted on the cluster
    own = {
        "phase": "Succeeded",
        "cluster": "east",
        "requestCounts": {"total": 10, "completed": 10, "failed": 0},
        "startedAt": T0,
        "finishedAt": T1,
        "output": {"results": "pvc://results/nightly/out.jsonl"},
    }
    st = status(call(dedicated(), World(observed=observed, own=own)))
    assert {k: st.get(k) for k in own} == {**own, "cluster": "east"}


def test_a_changed_spec_keeps_the_job_it_created() -> None:
    first = call(dedicated())
    observed = as_observed(objects(first), remote={"worker": job_status("running")})
    got = call(dedicated(model="BAAI/bge-large-en"), World(observed=observed))
    # The Job keeps running what it started with; a new Job would run the batch again.
    assert objects(got)["worker"]["spec"] == objects(first)["worker"]["spec"]
    assert any("delete and recreate" in w for w in warnings(got))
    assert "the spec changed after the Job was created" in condition(got)["message"]


# --- bad input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("run", "says"),
    [
        pytest.param(
            dedicated(input={"uri": "ftp://host/in.jsonl"}),
            "spec.input.uri: unknown scheme ftp://",
            id="unknown-scheme",
        ),
        pytest.param(
            dedicated(output={"uri": "https://data.example.com/batches/in.jsonl"}),
            "spec.input.uri and spec.output.uri: must differ",
            id="input-is-output",
        ),
        pytest.param(
            dedicated(output={"uri": "pvc://results"}),
            "spec.output.uri: 'pvc://results' does not name a file",
            id="pvc-without-path",
        ),
        pytest.param(
            dedicated(output={"uri": "pvc://results/o.jsonl", "secretRef": {"name": "x"}}),
            "spec.output.secretRef: a pvc:// uri takes no secretRef",
            id="pvc-with-secret",
        ),
        pytest.param(
            dedicated(schedule="61 * * * *"),
            "spec.schedule: '61 * * * *' is not a cron schedule: minute field '61'",
            id="minute-out-of-range",
        ),
        pytest.param(
            dedicated(schedule="0 2 * *"),
            "spec.schedule: '0 2 * *' is not a cron schedule: has 4 fields",
            id="four-fields",
        ),
        pytest.param(dedicated(schedule="0 2 * * MOON"), "day of week field 'MOON'", id="not-a-day"),
        pytest.param(dedicated(deadline="soon"), "spec.deadline: 'soon' is not a duration", id="deadline"),
        pytest.param(
            dedicated(model=None), "spec.model: required when spec.mode is Dedicated", id="dedicated-without-model"
        ),
        pytest.param(
            dedicated(workers={"count": 2, "topology": {"tensor": 1}, "template": TEMPLATE}),
            "spec.workers.count: must be 1",
            id="two-workers",
        ),
        pytest.param(
            dedicated(workers={"count": 1, "topology": {"tensor": 8, "pipeline": 2}, "template": TEMPLATE}),
            "spec.workers.topology: must fit on one node",
            id="multi-node-worker",
        ),
        pytest.param(
            via_service(modelServiceRef=None),
            "spec.modelServiceRef: required when spec.mode is Service",
            id="service-without-ref",
        ),
    ],
)
def test_bad_input_names_the_field_and_keeps_what_runs(run: dict[str, Any], says: str) -> None:
    if run["spec"].get("model") is None:
        run["spec"].pop("model", None)
    if "modelServiceRef" in run["spec"] and run["spec"]["modelServiceRef"] is None:
        del run["spec"]["modelServiceRef"]
    before = call(dedicated())
    got = call(run, World(observed=as_observed(objects(before))))
    scheduled = condition(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_FALSE", "InvalidSpec")
    assert says in scheduled["message"]
    assert set(objects(got)) == set(objects(before))  # nothing composed is dropped


def test_waits_for_the_fleet_and_keeps_everything() -> None:
    before = call(dedicated())
    got = call(dedicated(), World(observed=as_observed(objects(before)), fetched=False))
    scheduled = condition(got)
    assert (scheduled["status"], scheduled["reason"]) == ("STATUS_CONDITION_UNKNOWN", "WaitingForFleet")
    assert set(objects(got)) == set(objects(before))
    assert set(got["requirements"]["resources"]) == {"clusters", "classes", "runs", "pods", "jobs"}


# --- composed objects are what the API servers accept ---------------------------------------------------

_KUEUE = (cluster("east", free=_IDLE, scheduler={"type": "Kueue", "kueue": {"localQueueName": "batch"}}),)
_KAI = (cluster("east", free=_IDLE, scheduler={"type": "KAI", "kai": {"queue": "research"}}),)


@pytest.mark.parametrize(
    ("run", "world"),
    [
        pytest.param(dedicated(deadline="6h", ttlAfterFinished="26h"), World(clusters=_KUEUE), id="job-kueue"),
        pytest.param(
            dedicated(
                schedule="0 2 * * *",
                priority="batch-low",
                input={"uri": "s3://corpus/in.jsonl", "secretRef": {"name": "aws"}},
                output={
                    "uri": "s3://corpus/out.jsonl",
                    "errorsUri": "s3://corpus/err.jsonl",
                    "secretRef": {"name": "aws"},
                },
            ),
            World(clusters=_KAI),
            id="cronjob-kai-s3",
        ),
        pytest.param(
            dedicated(modelCacheRef={"name": "bge-weights", "mountPath": "/weights"}),
            World(cache=model_cache({"east": "Ready"})),
            id="job-model-cache",
        ),
        pytest.param(
            dedicated(
                input={"uri": "pvc://corpus/in.jsonl"},
                output={"uri": "https://up.example.com/o.jsonl", "secretRef": {"name": "t"}},
            ),
            World(),
            id="job-pvc-https",
        ),
        pytest.param(
            via_service(
                schedule="@daily", modelServiceRef={"name": "assistant", "apiKeySecretRef": {"name": "k", "key": "v"}}
            ),
            World(
                clusters=_SERVICE_FLEET,
                service=service(("llm-east", "llm-west")),
                endpoints=_POOL_ENDPOINTS,
                pools=(model_pool("llm", "east", priority=5), model_pool("llm", "west")),
            ),
            id="service-cronjob-objectives",
        ),
    ],
)
def test_every_object_validates_against_the_real_schemas(run: dict[str, Any], world: World) -> None:
    assert xrds.validate(run).errors == ()
    got = call(run, world)
    assert objects(got)
    for key, obj in objects(got).items():
        assert xrds.validate(obj).errors == (), key
        inner = obj.get("spec", {}).get("forProvider", {}).get("manifest")
        if inner is not None:
            result = xrds.validate(inner)
            assert result.schema_found, (key, inner["kind"])
            assert result.errors == (), (key, inner["kind"])
            builtin = xrds.builtin_validator(inner["apiVersion"], inner["kind"])
            if builtin is not None:  # the OpenAPI document does not refuse unknown fields: the API server prunes them
                assert _unknown_fields(builtin, inner, []) == [], (key, inner["kind"])


def _unknown_fields(validator: Any, value: Any, path: list[str | int]) -> list[str]:
    if isinstance(value, list):
        return [u for i, item in enumerate(value) for u in _unknown_fields(validator, item, [*path, i])]
    if not isinstance(value, dict):
        return []
    declared = validator.fields_at(path)
    out = [".".join(map(str, [*path, k])) for k in value if declared and k not in declared]
    return out + [
        u for k, v in value.items() if not declared or k in declared for u in _unknown_fields(validator, v, [*path, k])
    ]


def test_a_client_already_composed_stays_when_its_service_goes() -> None:
    world = World(clusters=_SERVICE_FLEET, service=service(), endpoints=_ENDPOINTS, replicas=_REPLICAS)
    first = call(via_service(), world)
    observed = as_observed(objects(first), remote={"worker": job_status("running")})
    got = call(via_service(), World(clusters=_SERVICE_FLEET, observed=observed))
    # Nothing it composed changes: the client goes on posting where it posted, and the run says why.
    assert {k: o["spec"] for k, o in objects(got).items()} == {k: o["spec"] for k, o in objects(first).items()}
    assert status(got)["phase"] == "Running"
    assert "ModelService assistant not found" in condition(got)["message"]
    assert any("ModelService assistant not found" in w for w in warnings(got))


def test_a_job_the_cluster_refuses_is_said() -> None:
    first = call(dedicated(priority="batch-low"))
    observed = as_observed(objects(first))
    worker = observed["worker"]
    del worker["status"]["atProvider"]
    refused = 'cannot create object: jobs.batch "nightly" is forbidden: exceeded quota: gpu'
    worker["status"]["conditions"] = [
        {"type": "Synced", "status": "False", "reason": "ReconcileError", "message": refused}
    ]
    got = call(dedicated(priority="batch-low"), World(observed=observed))
    assert status(got)["phase"] == "Scheduled"
    assert condition(got)["message"].endswith(f"creating the Job: the cluster refused it: {refused}")


@pytest.mark.parametrize(
    ("composed", "want"),
    [
        pytest.param({}, None, id="empty"),
        pytest.param({"spec": "not an object"}, None, id="spec-not-an-object"),
        pytest.param(
            {
                "spec": {
                    "forProvider": {
                        "manifest": {"spec": {"template": {"spec": {"volumes": ["a", 3], "containers": "x"}}}}
                    }
                }
            },
            None,
            id="lists-of-the-wrong-things",
        ),
        pytest.param(
            {
                "spec": {
                    "forProvider": {
                        "manifest": {
                            "spec": {
                                "jobTemplate": {
                                    "spec": {
                                        "template": {
                                            "spec": {
                                                "volumes": [
                                                    {"name": "model-cache", "persistentVolumeClaim": {"claimName": "c"}}
                                                ],
                                                "containers": [
                                                    {"volumeMounts": [{"name": "model-cache", "mountPath": "/m"}]}
                                                ],
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            },
            CacheMount("c", "/m"),
            id="a-cron-jobs-mount",
        ),
    ],
)
def test_a_composed_workers_mount_reads_without_raising(composed: dict[str, Any], want: CacheMount | None) -> None:
    assert _composed_mount(composed) == want
