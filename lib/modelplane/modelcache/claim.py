"""Storage type PVC: a cache's PersistentVolumeClaim on a workload cluster and the Job that fills it.

The Job runs once per source: its name carries a digest of what it runs, so a changed source
starts a new Job (a Job's pod template cannot change) while the claim, and the copy in it, stays.
User values reach the container as environment variables, never spliced into the script. The
images are pinned by tag (docs/model-cache.md lists them):

- Hugging Face: ``python`` with ``huggingface_hub`` (pinned) installed at start, ``huggingface-cli
  download`` into the claim;
- S3: ``amazon/aws-cli``, ``aws s3 sync`` into the claim;
- HTTP: ``curlimages/curl``, the file saved under its own name;
- OCI: the model image itself (the KServe modelcar layout: weights under ``/models`` and a
  shell), whose ``/models`` is copied into the claim.

A source that names a Secret gets an init container, ``check-secret``, first: the function cannot
read Secrets on the workload cluster, so the pod reads the Secret's keys as optional variables (the
pod starts even when the Secret is missing) and the check exits 3 when one is empty. The Job's
``podFailurePolicy`` fails the whole Job on that exit code at once (reason ``PodFailurePolicy``)
instead of retrying, and the function lifts that into the copy's status (``secret_check``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from modelplane.modelcache.work import CacheWork, Source, SourceKind
from modelplane.names import MODEL_CACHE_LABEL, cache_claim_name, cache_job_name, cache_label

HUGGING_FACE_IMAGE = "python:3.12.7-slim-bookworm"
HUGGING_FACE_HUB = "huggingface_hub==0.26.2"
AWS_CLI_IMAGE = "amazon/aws-cli:2.17.0"
CURL_IMAGE = "curlimages/curl:8.10.1"
# Where the claim is mounted in the Job.
MOUNT_PATH = "/cache"
# The group the claim's files are written with (images such as curl's run as a non-root user).
_FS_GROUP = 65532
_BACKOFF_LIMIT = 3
# A batch/v1 Job deleted without a propagation policy orphans its pods (the API's default for Jobs),
# and provider-kubernetes v1.2.1 deletes without one: a finished pod left behind keeps the claim in
# use, so the claim could never be deleted. The Job's own finalizer makes the default deletion a
# foreground one: its pods go first, then the Job.
_DELETE_PODS_FIRST = "foregroundDeletion"
# The Hugging Face client's own cache: scratch space in the pod, not the claim.
_HF_HOME = "/tmp/hf-home"  # noqa: S108 - a path in the Job's container, not on this host

_HUGGING_FACE = (
    f"pip install --quiet --no-cache-dir --target /tmp/hf '{HUGGING_FACE_HUB}'"
    ' && PYTHONPATH=/tmp/hf exec python -m huggingface_hub.commands.huggingface_cli download "$MODEL_REPO"'
    f' --revision "$MODEL_REVISION" --local-dir {MOUNT_PATH}'
)
_S3 = f'exec aws s3 sync --only-show-errors "$MODEL_URI" {MOUNT_PATH}'
_HTTP = (
    'if [ -n "${MODEL_TOKEN:-}" ]; then set -- -H "Authorization: Bearer $MODEL_TOKEN"; fi'
    f' && curl -fSL --retry 5 "$@" -o "{MOUNT_PATH}/.$MODEL_FILE.part" "$MODEL_URL"'
    f' && mv "{MOUNT_PATH}/.$MODEL_FILE.part" "{MOUNT_PATH}/$MODEL_FILE"'
)
_OCI = f"cp -a /models/. {MOUNT_PATH}/"
# The init container that stops the Job when the source's Secret, or a key of it, is missing.
CHECK_SECRET = "check-secret"  # noqa: S105 - a container's name, not a password
# Its exit code for that, which the Job's podFailurePolicy turns into a failed Job at once.
SECRET_MISSING_EXIT = 3
# What it prints to stderr (its termination message) before it exits: user values only as variables.
_CHECK_FAILED = (
    'echo "Secret $SECRET_NAME in namespace $SECRET_NAMESPACE is missing, or lacks one of the keys: $SECRET_KEYS" >&2'
    f"; exit {SECRET_MISSING_EXIT}"
)
# The S3 keys the download cannot do without (AWS_SESSION_TOKEN is optional).
_S3_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


@dataclass(frozen=True)
class SecretCheck:
    """The Secret a source names, as ``check-secret`` checks it.

    Attributes:
        field: The spec field that names it, e.g. ``spec.source.s3.secretRef``.
        secret: The Secret's name (in the cache's namespace on the workload cluster).
        keys: The keys the download needs.
    """

    field: str
    secret: str
    keys: tuple[str, ...]


def secret_check(source: Source) -> SecretCheck | None:
    """The Secret ``source`` names and the keys it needs, or None for a source without one."""
    if not source.secret:
        return None
    match source.kind:
        case SourceKind.HUGGING_FACE:
            return SecretCheck("spec.source.huggingFace.tokenSecretRef", source.secret, (source.secret_key,))
        case SourceKind.S3:
            return SecretCheck("spec.source.s3.secretRef", source.secret, _S3_KEYS)
        case SourceKind.HTTP:
            return SecretCheck("spec.source.http.secretRef", source.secret, (source.secret_key,))
        case SourceKind.OCI:
            return None


def claim(work: CacheWork) -> dict[str, Any]:
    """The PersistentVolumeClaim the copy lives in (``cache_claim_name``), sized ``spec.size``."""
    # A volume of ReadOnlyMany alone mounts read-only everywhere: ask for one writer too, for the Job.
    modes = [work.access_mode, "ReadWriteOnce"] if work.access_mode == "ReadOnlyMany" else [work.access_mode]
    spec: dict[str, Any] = {
        "accessModes": modes,
        "volumeMode": "Filesystem",
        "resources": {"requests": {"storage": work.size}},
    }
    if work.storage_class:
        spec["storageClassName"] = work.storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": cache_claim_name(work.name), "namespace": work.namespace, "labels": _labels(work)},
        "spec": spec,
    }


def hydration_job(work: CacheWork) -> dict[str, Any]:
    """The Job that downloads the source into the claim, named for what it runs (``cache_job_name``)."""
    container: dict[str, Any] = {
        "name": "hydrate",
        **_container(work.source),
        "volumeMounts": [{"name": "cache", "mountPath": MOUNT_PATH}],
    }
    pod: dict[str, Any] = {
        "restartPolicy": "Never",  # also what a podFailurePolicy requires
        "securityContext": {"fsGroup": _FS_GROUP},
        "containers": [container],
        "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": cache_claim_name(work.name)}}],
    }
    check = secret_check(work.source)
    if check is not None:
        pod["initContainers"] = [_check_container(check, work.namespace, container["image"])]
    # A retry (the cache's annotation) is part of what the Job runs: a new value, a new Job.
    hashed: dict[str, Any] = {"pod": pod, "retry": work.retry} if work.retry else pod
    digest = hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()
    spec: dict[str, Any] = {
        "backoffLimit": _BACKOFF_LIMIT,
        "template": {"metadata": {"labels": _labels(work)}, "spec": pod},
    }
    if check is not None:
        # A missing Secret does not heal by retrying: fail the Job at once, with reason PodFailurePolicy.
        exit_codes = {"containerName": CHECK_SECRET, "operator": "In", "values": [SECRET_MISSING_EXIT]}
        spec["podFailurePolicy"] = {"rules": [{"action": "FailJob", "onExitCodes": exit_codes}]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": cache_job_name(work.name, digest),
            "namespace": work.namespace,
            "labels": _labels(work),
            "finalizers": [_DELETE_PODS_FIRST],
        },
        "spec": spec,
    }


def namespace(work: CacheWork) -> dict[str, Any]:
    """The cache's namespace on the workload cluster (replicas of the namespace share it)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": work.namespace}}


def _labels(work: CacheWork) -> dict[str, str]:
    return {MODEL_CACHE_LABEL: cache_label(work.name)}


def _env(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def _secret_env(name: str, secret: str, key: str, *, optional: bool = False) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": secret, "key": key}
    if optional:
        ref["optional"] = True
    return {"name": name, "valueFrom": {"secretKeyRef": ref}}


def _check_container(check: SecretCheck, namespace: str, image: str) -> dict[str, Any]:
    """``check-secret``, in the download's own image (it has a shell, and is pulled anyway): each key optional."""
    values = [f"SECRET_VALUE_{i}" for i in range(len(check.keys))]
    env = [
        _env("SECRET_NAME", check.secret),
        _env("SECRET_NAMESPACE", namespace),
        _env("SECRET_KEYS", ", ".join(check.keys)),
    ]
    env += [_secret_env(v, check.secret, key, optional=True) for v, key in zip(values, check.keys, strict=True)]
    # An optional key that is absent (or a Secret that is) leaves its variable unset: each must be non-empty.
    script = " && ".join(f'[ -n "${{{v}:-}}" ]' for v in values) + f" || {{ {_CHECK_FAILED}; }}"
    return {
        "name": CHECK_SECRET,
        "image": image,
        "command": ["sh", "-c", script],
        "env": env,
        # Its stderr becomes the container's termination message (kubectl describe shows it).
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def _container(source: Source) -> dict[str, Any]:
    """The image, command and environment that download ``source``."""
    match source.kind:
        case SourceKind.HUGGING_FACE:
            env = [_env("MODEL_REPO", source.location), _env("MODEL_REVISION", source.revision or "main")]
            env.append(_env("HF_HOME", _HF_HOME))
            if source.secret:
                env.append(_secret_env("HF_TOKEN", source.secret, source.secret_key))
            return {"image": HUGGING_FACE_IMAGE, "command": ["sh", "-c", _HUGGING_FACE], "env": env}
        case SourceKind.S3:
            env = [_env("MODEL_URI", source.location)]
            if source.region:
                env += [_env("AWS_REGION", source.region), _env("AWS_DEFAULT_REGION", source.region)]
            if source.secret:
                env += [
                    _secret_env("AWS_ACCESS_KEY_ID", source.secret, "AWS_ACCESS_KEY_ID"),
                    _secret_env("AWS_SECRET_ACCESS_KEY", source.secret, "AWS_SECRET_ACCESS_KEY"),
                    _secret_env("AWS_SESSION_TOKEN", source.secret, "AWS_SESSION_TOKEN", optional=True),
                ]
            return {"image": AWS_CLI_IMAGE, "command": ["sh", "-c", _S3], "env": env}
        case SourceKind.HTTP:
            file = source.location.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            env = [_env("MODEL_URL", source.location), _env("MODEL_FILE", file)]
            if source.secret:
                env.append(_secret_env("MODEL_TOKEN", source.secret, source.secret_key))
            return {"image": CURL_IMAGE, "command": ["sh", "-c", _HTTP], "env": env}
        case SourceKind.OCI:
            return {"image": source.location, "command": ["sh", "-c", _OCI]}
