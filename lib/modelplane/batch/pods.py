"""A batch run's pod, Job and CronJob on its workload cluster, and the ConfigMap with the program the pod runs.

The pod's reporting container runs ``batch.py`` (``modelplane.batch.scripts``) from the run's
ConfigMap: in mode Dedicated as a wrapper around the engine (``vllm run-batch`` unless the
template's first container sets its own command), in mode Service as the client. Files reach the
pod as the scheme says (docs/batch.md): https:// through the program itself, pvc:// as the claim
mounted under ``PVC_ROOT``, s3:// through an ``amazon/aws-cli`` init container that stages the
input and a ``stage-out`` container that uploads once the program marks the output done.
User values reach containers as environment variables, never spliced into a script.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from modelplane.batch.objectives import objective_name
from modelplane.batch.uris import Scheme
from modelplane.batch.work import BatchWork
from modelplane.modelcache.claim import AWS_CLI_IMAGE
from modelplane.names import BATCH_REPORTER_ANNOTATION

SCRIPT = "batch.py"
SCRIPTS_PATH = "/modelplane/scripts"
DATA_PATH = "/modelplane/data"
PVC_ROOT = "/modelplane/pvc"
SCRIPTS_VOLUME, DATA_VOLUME = "modelplane-batch-scripts", "modelplane-batch-data"
# The client of a Service-mode run: Python with nothing installed (the program needs only its standard library).
CLIENT_IMAGE = "python:3.12.7-slim-bookworm"
CLIENT_CONTAINER = "client"
STAGE_IN, STAGE_OUT = "stage-in", "stage-out"
# The engine a Dedicated worker runs when its container sets no command of its own.
VLLM_BATCH = ("vllm", "run-batch")
# The Secret key an https:// location's Authorization header is read from.
AUTHORIZATION_KEY = "authorization"
# Deleting a Job without a propagation policy (provider-kubernetes does) orphans its pods, which
# would keep their GPUs: the Job's own finalizer makes the deletion a foreground one.
_DELETE_PODS_FIRST = "foregroundDeletion"
_OURS = "MODELPLANE_BATCH_"

_STAGE_IN = 'exec aws s3 cp --only-show-errors "$MODELPLANE_BATCH_INPUT" "$MODELPLANE_BATCH_INPUT_FILE"'
_STAGE_OUT = (
    f'out="{DATA_PATH}/out"; until [ -e "$out/.done" ] || [ -e "$out/.failed" ]; do sleep 5; done'
    '; [ -e "$out/.done" ] || exit 1'
    '; aws s3 cp --only-show-errors "$out/results.jsonl" "$MODELPLANE_BATCH_OUTPUT"'
    ' && { [ -z "${MODELPLANE_BATCH_ERRORS:-}" ]'
    ' || aws s3 cp --only-show-errors "$out/errors.jsonl" "$MODELPLANE_BATCH_ERRORS"; }'
)


def script() -> str:
    """The program's source, as the ConfigMap carries it."""
    return (Path(__file__).parent / "scripts" / SCRIPT).read_text(encoding="utf-8")


def scripts_config_map(work: BatchWork, name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The ConfigMap ``name`` with the program."""
    meta = {"name": name, "namespace": work.namespace, "labels": dict(labels)}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {SCRIPT: script()}}


def input_file(work: BatchWork) -> str:
    """Where the pod reads the input: in the mounted claim (pvc://), else where it is staged."""
    if work.input.scheme is Scheme.PVC:
        return f"{PVC_ROOT}/{work.input.claim}/{work.input.path}"
    return f"{DATA_PATH}/input.jsonl"


def output_file() -> str:
    """Where the engine (or the client) writes the output before the program delivers it."""
    return f"{DATA_PATH}/output.jsonl"


def _env(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def _secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def _files_env(work: BatchWork) -> list[dict[str, Any]]:
    env = [
        _env("MODELPLANE_BATCH_INPUT", work.input.uri),
        _env("MODELPLANE_BATCH_OUTPUT", work.output.uri),
        _env("MODELPLANE_BATCH_INPUT_FILE", input_file(work)),
    ]
    if work.errors is not None:
        env.append(_env("MODELPLANE_BATCH_ERRORS", work.errors.uri))
    return env


def _program_env(work: BatchWork, url: str) -> list[dict[str, Any]]:
    """What the program reads (docs/batch.md lists it for engines that plug in)."""
    env = [
        *_files_env(work),
        _env("MODELPLANE_BATCH_OUTPUT_FILE", output_file()),
        _env("MODELPLANE_BATCH_DATA", DATA_PATH),
        _env("MODELPLANE_BATCH_PVC_ROOT", PVC_ROOT),
        _env("MODELPLANE_BATCH_ENDPOINT", work.endpoint),
    ]
    if work.model:
        env.append(_env("MODELPLANE_BATCH_MODEL", work.model))
    for which, place in (("INPUT", work.input), ("OUTPUT", work.output)):
        if place.scheme is Scheme.HTTPS and place.secret:
            env.append(_secret_env(f"MODELPLANE_BATCH_{which}_AUTHORIZATION", place.secret, AUTHORIZATION_KEY))
    if url:
        env += [
            _env("MODELPLANE_BATCH_URL", url),
            _env("MODELPLANE_BATCH_CONCURRENCY", str(work.concurrency)),
            # The run's InferenceObjective on the service's pools (modelplane.batch.objectives).
            _env("MODELPLANE_BATCH_OBJECTIVE", objective_name(work.name)),
        ]
        if work.api_key is not None:
            env.append(_secret_env("MODELPLANE_BATCH_API_KEY", work.api_key.secret, work.api_key.key))
    return env


def _claims(work: BatchWork) -> dict[str, str]:
    """The claims the run mounts, each with its volume's name, in a stable order."""
    names = sorted({p.claim for p in work.locations if p.scheme is Scheme.PVC})
    return {claim: f"modelplane-batch-pvc-{i}" for i, claim in enumerate(names)}


def _mounts(work: BatchWork) -> list[dict[str, Any]]:
    written = {p.claim for p in (work.output, work.errors) if p is not None and p.scheme is Scheme.PVC}
    mounts: list[dict[str, Any]] = [
        {"name": SCRIPTS_VOLUME, "mountPath": SCRIPTS_PATH, "readOnly": True},
        {"name": DATA_VOLUME, "mountPath": DATA_PATH},
    ]
    for claim, volume in _claims(work).items():
        mount: dict[str, Any] = {"name": volume, "mountPath": f"{PVC_ROOT}/{claim}"}
        if claim not in written:
            mount["readOnly"] = True
        mounts.append(mount)
    return mounts


def volumes(work: BatchWork, scripts: str) -> list[dict[str, Any]]:
    """The pod's volumes: the program, scratch space for the files, and each claim a pvc:// location names."""
    out: list[dict[str, Any]] = [
        {"name": SCRIPTS_VOLUME, "configMap": {"name": scripts}},
        {"name": DATA_VOLUME, "emptyDir": {}},
    ]
    out += [{"name": v, "persistentVolumeClaim": {"claimName": c}} for c, v in _claims(work).items()]
    return out


def _staging(name: str, command: str, env: list[dict[str, Any]], secret: str) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "image": AWS_CLI_IMAGE,
        "command": ["sh", "-c", command],
        "env": env,
        "volumeMounts": [{"name": DATA_VOLUME, "mountPath": DATA_PATH}],
    }
    if secret:
        container["envFrom"] = [{"secretRef": {"name": secret}}]
    return container


def stage_in(work: BatchWork) -> list[dict[str, Any]]:
    """The init container that downloads an s3:// input (none for the other schemes)."""
    if work.input.scheme is not Scheme.S3:
        return []
    return [_staging(STAGE_IN, _STAGE_IN, _files_env(work), work.input.secret)]


def stage_out(work: BatchWork) -> list[dict[str, Any]]:
    """The container that uploads an s3:// output once the program has marked it done (none otherwise)."""
    if work.output.scheme is not Scheme.S3:
        return []
    return [_staging(STAGE_OUT, _STAGE_OUT, _files_env(work), work.output.secret)]


def _program(engine: Sequence[str]) -> list[str]:
    command = ["python3", f"{SCRIPTS_PATH}/{SCRIPT}"]
    return [*command, "worker", "--", *engine] if engine else [*command, "client"]


def engine_command(work: BatchWork, container: Mapping[str, Any]) -> list[str]:
    """The engine a Dedicated worker runs: the container's own command and args, or vllm run-batch with its args."""
    args = [str(a) for a in container.get("args") or []]
    if container.get("command"):
        return [*(str(c) for c in container["command"]), *args]
    files = ["-i", input_file(work), "-o", output_file(), "--model", work.model]
    return [*VLLM_BATCH, *files, *args]


def _reporting(container: Mapping[str, Any], work: BatchWork, command: list[str], url: str) -> dict[str, Any]:
    """``container`` running the program: its command, the program's environment and the files mounted."""
    out = {k: v for k, v in container.items() if k not in ("command", "args")}
    out["command"] = command
    user_env = [e for e in container.get("env") or [] if not str(e.get("name", "")).startswith(_OURS)]
    out["env"] = [*user_env, *_program_env(work, url)]
    ours = _mounts(work)
    taken = {m["mountPath"] for m in ours}
    user = [m for m in container.get("volumeMounts") or [] if m.get("mountPath") not in taken]
    out["volumeMounts"] = [*user, *ours]
    out["terminationMessagePolicy"] = "File"
    return out


def worker_pod(work: BatchWork, spec: Mapping[str, Any], scripts: str) -> dict[str, Any]:
    """A Dedicated worker's pod: ``spec`` (the template's, with its DRA claim), the program wrapping the engine."""
    containers = list(spec.get("containers") or [])
    engine = containers[0] if containers else {}
    out = dict(spec)
    wrapped = _reporting(engine, work, _program(engine_command(work, engine)), "")
    out["containers"] = [wrapped, *containers[1:], *stage_out(work)]
    out["initContainers"] = [*(spec.get("initContainers") or []), *stage_in(work)]
    if not out["initContainers"]:
        del out["initContainers"]
    ours = volumes(work, scripts)
    names = {v["name"] for v in ours}
    out["volumes"] = [*(v for v in spec.get("volumes") or [] if v.get("name") not in names), *ours]
    out["restartPolicy"] = "Never"
    return out


def client_pod(work: BatchWork, url: str, scripts: str) -> dict[str, Any]:
    """A Service-mode run's pod spec: the program posting to ``url``."""
    client = _reporting({"name": CLIENT_CONTAINER, "image": CLIENT_IMAGE}, work, _program(()), url)
    out: dict[str, Any] = {"restartPolicy": "Never", "containers": [client, *stage_out(work)]}
    if stage_in(work):
        out["initContainers"] = stage_in(work)
    out["volumes"] = volumes(work, scripts)
    return out


def _job_spec(work: BatchWork, pod: Mapping[str, Any], pod_meta: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"backoffLimit": work.retries}
    if work.deadline is not None:
        spec["activeDeadlineSeconds"] = work.deadline
    if work.ttl is not None:
        spec["ttlSecondsAfterFinished"] = work.ttl
    reporter = str((pod.get("containers") or [{}])[0].get("name", ""))
    annotations = {**(pod_meta.get("annotations") or {}), BATCH_REPORTER_ANNOTATION: reporter}
    spec["template"] = {"metadata": {**pod_meta, "annotations": annotations}, "spec": dict(pod)}
    return spec


def job(
    work: BatchWork, name: str, labels: Mapping[str, str], pod: Mapping[str, Any], pod_meta: Mapping[str, Any]
) -> dict[str, Any]:
    """The run's Job (a one-shot run), or its CronJob (with ``work.schedule``)."""
    meta = {"name": name, "namespace": work.namespace, "labels": dict(labels), "finalizers": [_DELETE_PODS_FIRST]}
    spec = _job_spec(work, pod, pod_meta)
    if not work.scheduled:
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}
    cron = {
        "schedule": work.schedule,
        "concurrencyPolicy": work.concurrency_policy,
        "successfulJobsHistoryLimit": work.history,
        "failedJobsHistoryLimit": work.history,
        "jobTemplate": {"metadata": {"labels": dict(labels)}, "spec": spec},
    }
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": cron}
