"""compose-model-cache: which clusters keep a copy, what each copy is made of, how far each got, and what is kept.

Checked as a user of the fleet would: which clusters the objects land on (their ProviderConfig),
what the claim and the hydration Job on each cluster ask for, the phases ``status.clusters`` says,
the Deployed condition, and that a copy a replica may mount is never dropped.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_cache.fn import FunctionRunner

# The validation harness, imported as the function tests import it (tests/functions/conftest.py).
import xrds  # isort: skip

_HF = {"huggingFace": {"repo": "meta-llama/Llama-3.1-8B-Instruct", "revision": "0e9e39f"}}
_HF_TOKEN = {"huggingFace": {"repo": "org/model", "tokenSecretRef": {"name": "hf-token", "key": "HF_TOKEN"}}}
_S3_KEYS = {"s3": {"uri": "s3://models/llama/", "secretRef": {"name": "aws"}}}
_HTTP_TOKEN = {"http": {"url": "https://example.com/m.gguf", "secretRef": {"name": "bearer"}}}
_T0, _T1 = "2026-11-27T10:00:00Z", "2026-11-27T10:20:00Z"


def _cache(**spec: Any) -> dict[str, Any]:
    body = {"source": _HF, "size": "16Gi", **spec}
    meta = {"name": "llama", "namespace": "ml"}
    return {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelCache", "metadata": meta, "spec": body}


def _cluster(
    name: str,
    *,
    tier: str = "prod",
    backend: str = "KServe",
    published: bool = True,
    pools: tuple[str, ...] = ("h100",),
) -> dict[str, Any]:
    spec = {
        "cluster": {
            "source": "Existing",
            "existing": {"secretRef": {"namespace": "crossplane-system", "name": f"{name}-kubeconfig", "key": "k"}},
        },
        "nodePools": [{"name": p, "className": "nvidia-h100-8", "nodeCount": 2} for p in pools],
        "serving": {"backend": backend},
    }
    status = {"providerConfigRef": {"name": f"{name}-config"}} if published else {}
    meta = {"name": name, "labels": {"tier": tier}}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def _replica(name: str, cluster: str | None) -> dict[str, Any]:
    spec = {"inferenceClusterRef": {"name": cluster}} if cluster else {}
    meta = {"name": name, "namespace": "ml", "labels": {"modelplane.ai/model-cache": "llama"}}
    return {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelReplica", "metadata": meta, "spec": spec}


_FLEET = (_cluster("east"), _cluster("west"), _cluster("lab", tier="staging", backend="Native"))


def _run(
    cache: dict[str, Any],
    *,
    clusters: tuple[dict[str, Any], ...] = _FLEET,
    replicas: tuple[dict[str, Any], ...] = (),
    observed: dict[str, dict[str, Any]] | None = None,
    fetched: bool = True,
) -> dict[str, Any]:
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(cache))),
    )
    if fetched:
        for name, items in (("clusters", clusters), ("replicas", replicas)):
            req.required_resources[name].SetInParent()
            for item in items:
                req.required_resources[name].items.add().resource.update(item)
    for key, body in (observed or {}).items():
        req.observed.resources[key].resource.update(body)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    # Every observed object is accounted for by the function itself, not by the runner's last guard.
    assert not [r for r in got.get("results", []) if "accounted for" in r.get("message", "")]
    return got


def _objects(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}


def _manifests(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["spec"]["forProvider"]["manifest"] for k, v in _objects(got).items()}


def _of_kind(got: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k.split(".")[0]: m for k, m in _manifests(got).items() if m["kind"] == kind}


def _status(got: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = got["desired"]["composite"]["resource"]["status"]
    return status


def _copies(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in _status(got)["clusters"]}


def _deployed(got: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == "Deployed")


def _ready(got: dict[str, Any]) -> bool:
    return bool(got["desired"]["composite"].get("ready") == "READY_TRUE")


def _job_key(got: dict[str, Any], cluster: str) -> str:
    (key,) = [k for k in _objects(got) if k.startswith(f"{cluster}.job-")]
    return key


def _observe(got: dict[str, Any], **remote_status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What was composed, as observed: every object applied; the Job of each named cluster with that status."""
    out = {}
    for key, obj in _objects(got).items():
        manifest = dict(obj["spec"]["forProvider"]["manifest"])
        cluster, _, part = key.partition(".")
        if cluster in remote_status and (part.startswith("job-") or part == "localmodelcache"):
            manifest["status"] = remote_status[cluster]
        ready = {"type": "Ready", "status": "True"}
        out[key] = {**obj, "status": {"conditions": [ready], "atProvider": {"manifest": manifest}}}
    return out


_RUNNING = {"active": 1, "startTime": _T0}
_DONE = {
    "succeeded": 1,
    "startTime": _T0,
    "completionTime": _T1,
    "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": _T1}],
}
_FAILED = {
    "failed": 4,
    "startTime": _T0,
    "conditions": [
        {
            "type": "Failed",
            "status": "True",
            "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit",
            "lastTransitionTime": _T1,
        }
    ],
}


@pytest.mark.parametrize(
    ("spec", "replicas", "want"),
    [
        pytest.param({}, (), [], id="follow-no-selector-no-replica-nowhere"),
        pytest.param({}, (_replica("llm-0", "west"),), ["west"], id="follow-stages-where-a-replica-is"),
        pytest.param(
            {"clusterSelector": {"matchLabels": {"tier": "prod"}}},
            (_replica("llm-0", "lab"),),
            ["east", "lab", "west"],
            id="follow-selector-and-replica-clusters",
        ),
        pytest.param(
            {"placement": "Static", "clusterSelector": {"matchLabels": {"tier": "prod"}}},
            (),
            ["east", "west"],
            id="static-the-selector",
        ),
        pytest.param(
            {"placement": "Static", "clusterSelector": {"matchLabels": {"tier": "prod"}}},
            (_replica("llm-0", "lab"),),
            ["east", "west"],
            id="static-ignores-a-replica-elsewhere",
        ),
        pytest.param(
            {"placement": "Static", "clusterSelector": {}}, (), ["east", "lab", "west"], id="static-empty-all"
        ),
        pytest.param(
            {
                "placement": "Static",
                "clusterSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["prod"]}]},
            },
            (),
            ["lab"],
            id="static-by-expression",
        ),
    ],
)
def test_copies_go_where_the_placement_says(
    spec: dict[str, Any], replicas: tuple[dict[str, Any], ...], want: list[str]
) -> None:
    got = _run(_cache(**spec), replicas=replicas)
    assert sorted(_of_kind(got, "PersistentVolumeClaim")) == want
    assert sorted(_of_kind(got, "Job")) == want
    assert sorted(_copies(got)) == want
    assert all(c["phase"] == "Pending" for c in _copies(got).values())
    # Every object of a cluster's copy reaches that cluster.
    for key, obj in _objects(got).items():
        assert obj["spec"]["providerConfigRef"]["name"] == f"{key.split('.')[0]}-config"
        assert obj["metadata"]["labels"]["modelplane.ai/model-cache"] == "llama"


@pytest.mark.parametrize(
    ("storage", "modes", "storage_class"),
    [
        pytest.param({}, ["ReadOnlyMany", "ReadWriteOnce"], None, id="default-read-only-many-and-one-writer"),
        pytest.param(
            {"type": "PVC", "pvc": {"storageClassName": "filestore", "accessMode": "ReadWriteMany"}},
            ["ReadWriteMany"],
            "filestore",
            id="read-write-many-on-a-class",
        ),
    ],
)
def test_the_claim_holds_the_size_and_the_job_fills_it(
    storage: dict[str, Any], modes: list[str], storage_class: str | None
) -> None:
    got = _run(_cache(storage=storage), replicas=(_replica("llm-0", "east"),))
    claim = _of_kind(got, "PersistentVolumeClaim")["east"]
    assert claim["metadata"] == {
        "name": "model-cache-llama",
        "namespace": "ml",
        "labels": {"modelplane.ai/model-cache": "llama"},
    }
    assert claim["spec"]["accessModes"] == modes
    assert claim["spec"]["resources"] == {"requests": {"storage": "16Gi"}}
    assert claim["spec"].get("storageClassName") == storage_class
    job = _of_kind(got, "Job")["east"]
    pod = job["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "cache", "persistentVolumeClaim": {"claimName": "model-cache-llama"}}]
    assert job["metadata"]["namespace"] == "ml"
    # Deleted without a propagation policy (provider-kubernetes v1.2.1), a Job orphans its pods, which
    # keep the claim in use: the finalizer makes the deletion take the pods first.
    assert job["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert _of_kind(got, "Namespace")["east"]["metadata"]["name"] == "ml"
    assert _status(got)["claimName"] == "model-cache-llama"


def _env(job: dict[str, Any]) -> dict[str, Any]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


@pytest.mark.parametrize(
    ("source", "image", "env"),
    [
        pytest.param(
            {"huggingFace": {"repo": "org/model", "tokenSecretRef": {"name": "hf"}}},
            "python:3.12.7-slim-bookworm",
            {
                "MODEL_REPO": "org/model",
                "MODEL_REVISION": "main",
                "HF_HOME": "/tmp/hf-home",  # noqa: S108 - in the Job's container
                "HF_TOKEN": {"secretKeyRef": {"name": "hf", "key": "token"}},
            },
            id="hugging-face-token-from-a-secret",
        ),
        pytest.param(
            {"s3": {"uri": "s3://models/llama/", "region": "us-east-1", "secretRef": {"name": "aws"}}},
            "amazon/aws-cli:2.17.0",
            {
                "MODEL_URI": "s3://models/llama/",
                "AWS_REGION": "us-east-1",
                "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": {"secretKeyRef": {"name": "aws", "key": "AWS_ACCESS_KEY_ID"}},
                "AWS_SECRET_ACCESS_KEY": {"secretKeyRef": {"name": "aws", "key": "AWS_SECRET_ACCESS_KEY"}},
                "AWS_SESSION_TOKEN": {"secretKeyRef": {"name": "aws", "key": "AWS_SESSION_TOKEN", "optional": True}},
            },
            id="s3-keys-from-a-secret",
        ),
        pytest.param(
            {"http": {"url": "https://example.com/files/model.gguf?download=1"}},
            "curlimages/curl:8.10.1",
            {"MODEL_URL": "https://example.com/files/model.gguf?download=1", "MODEL_FILE": "model.gguf"},
            id="http-one-file-under-its-name",
        ),
        pytest.param(
            {"oci": {"image": "registry.example.com/models/llama@sha256:" + "a" * 64}},
            "registry.example.com/models/llama@sha256:" + "a" * 64,
            {},
            id="oci-the-modelcar-image-itself",
        ),
    ],
)
def test_the_source_picks_the_download(source: dict[str, Any], image: str, env: dict[str, Any]) -> None:
    got = _run(_cache(source=source), replicas=(_replica("llm-0", "east"),))
    job = _of_kind(got, "Job")["east"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image
    assert _env(job) == env
    assert container["volumeMounts"] == [{"name": "cache", "mountPath": "/cache"}]


def test_a_new_source_is_a_new_job_and_the_same_claim() -> None:
    users = (_replica("llm-0", "east"),)
    first = _run(_cache(), replicas=users)
    observed = _observe(first, east=_DONE)
    changed = _cache(source={"huggingFace": {"repo": "meta-llama/Llama-3.1-8B-Instruct", "revision": "5206a32"}})
    second = _run(changed, replicas=users, observed=observed)
    assert _job_key(second, "east") != _job_key(first, "east")
    assert _objects(second)["east.pvc"] == _objects(first)["east.pvc"]
    # The old Job goes (the copy is in the claim); the new one starts.
    assert _job_key(first, "east") not in _objects(second)
    assert _copies(second)["east"]["phase"] == "Pending"


@pytest.mark.parametrize(
    ("job", "phase", "message", "since", "ready"),
    [
        pytest.param(None, "Pending", "creating the claim and the hydration Job", None, False, id="not-observed"),
        pytest.param({}, "Hydrating", "is starting", None, False, id="created-no-pod-yet"),
        pytest.param(_RUNNING, "Hydrating", "is downloading", _T0, False, id="running"),
        pytest.param(_DONE, "Ready", "completed", _T1, True, id="complete"),
        pytest.param(
            _FAILED,
            "Failed",
            "failed: BackoffLimitExceeded: Job has reached the specified backoff limit",
            _T1,
            False,
            id="failed-with-the-jobs-message",
        ),
    ],
)
def test_the_phase_follows_the_hydration_job(
    job: dict[str, Any] | None, phase: str, message: str, since: str | None, ready: bool
) -> None:
    users = (_replica("llm-0", "east"),)
    first = _run(_cache(), replicas=users)
    observed = _observe(first, east=job) if job is not None else {}
    got = _run(_cache(), replicas=users, observed=observed)
    copy = _copies(got)["east"]
    assert copy["phase"] == phase
    assert message in copy["message"]
    assert copy.get("since") == since
    assert copy.get("bytes") == (16 * 2**30 if phase == "Ready" else None)
    assert _status(got)["ready"] == (1 if phase == "Ready" else 0)
    assert _ready(got) is ready
    # A failed hydration keeps the claim, and what it holds.
    assert "east.pvc" in _objects(got)


def test_ready_once_every_cluster_is() -> None:
    cache = _cache(placement="Static", clusterSelector={"matchLabels": {"tier": "prod"}})
    first = _run(cache)
    assert _deployed(first)["reason"] == "Deploying"
    half = _run(cache, observed=_observe(first, east=_DONE, west=_RUNNING))
    assert (_status(half)["ready"], _ready(half)) == (1, False)
    assert _deployed(half)["status"] == "STATUS_CONDITION_TRUE"
    done = _run(cache, observed=_observe(first, east=_DONE, west=_DONE))
    assert (_status(done)["ready"], _ready(done)) == (2, True)


_NODE_LOCAL = {"storage": {"type": "NodeLocal"}}


def test_node_local_on_a_kserve_cluster_is_a_node_group_and_a_local_model_cache() -> None:
    got = _run(
        _cache(**_NODE_LOCAL), clusters=(_cluster("east", pools=("h100", "h200")),), replicas=(_replica("a", "east"),)
    )
    assert sorted(_of_kind(got, "LocalModelNodeGroup")) == ["east"]
    group = _of_kind(got, "LocalModelNodeGroup")["east"]
    assert group["metadata"]["name"] == "ml-llama"
    assert group["spec"]["storageLimit"] == "16Gi"
    terms = group["spec"]["persistentVolumeSpec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "modelplane.ai/pool", "operator": "In", "values": ["h100", "h200"]}]}
    ]
    cache = _of_kind(got, "LocalModelCache")["east"]
    assert cache["spec"] == {
        "sourceModelUri": "hf://meta-llama/Llama-3.1-8B-Instruct:0e9e39f",
        "modelSize": "16Gi",
        "nodeGroups": ["ml-llama"],
    }
    assert "PersistentVolumeClaim" not in {m["kind"] for m in _manifests(got).values()}
    assert "claimName" not in _status(got)


@pytest.mark.parametrize(
    ("copies", "phase", "message"),
    [
        pytest.param({}, "Hydrating", "waiting for KServe to list the nodes", id="no-nodes-yet"),
        pytest.param({"total": 3, "available": 1}, "Hydrating", "1 of 3 node copies downloaded", id="some-nodes"),
        pytest.param({"total": 3, "available": 3}, "Ready", "3 of 3", id="every-node"),
        pytest.param(
            {"total": 3, "available": 2, "failed": 1}, "Failed", "1 of 3 node copies failed", id="a-node-failed"
        ),
    ],
)
def test_node_local_phase_follows_the_node_copies(copies: dict[str, int], phase: str, message: str) -> None:
    cache, fleet, users = _cache(**_NODE_LOCAL), (_cluster("east"),), (_replica("a", "east"),)
    first = _run(cache, clusters=fleet, replicas=users)
    got = _run(cache, clusters=fleet, replicas=users, observed=_observe(first, east={"copies": copies}))
    assert _copies(got)["east"]["phase"] == phase
    assert message in _copies(got)["east"]["message"]


def _keys(got: dict[str, Any]) -> set[str]:
    return set(_objects(got))


@pytest.mark.parametrize(
    ("replicas", "kept", "message"),
    [
        pytest.param((_replica("llm-3", "west"),), True, "kept: replica llm-3 mounts it", id="a-replica-mounts-it"),
        pytest.param(
            (_replica("llm-3", "west"), _replica("llm-4", "west")),
            True,
            "kept: replicas llm-3, llm-4 mount it",
            id="two-replicas-mount-it",
        ),
        pytest.param((_replica("llm-9", None),), True, "ModelReplica llm-9 cannot be read", id="an-unreadable-replica"),
        pytest.param((_replica("llm-3", "east"),), False, "", id="no-replica-there-removed"),
    ],
)
def test_a_cluster_leaving_the_selector_keeps_a_copy_in_use(
    replicas: tuple[dict[str, Any], ...], kept: bool, message: str
) -> None:
    before = _cache(placement="Static", clusterSelector={"matchLabels": {"tier": "prod"}})
    first = _run(before)
    observed = _observe(first, east=_DONE, west=_DONE)
    west = {k for k in observed if k.startswith("west.")}
    # West is relabelled out of the selector.
    fleet = (_cluster("east"), _cluster("west", tier="retired"), _FLEET[2])
    got = _run(before, clusters=fleet, replicas=replicas, observed=observed)
    if kept:
        assert west <= _keys(got)
        assert all(_objects(got)[k]["spec"] == observed[k]["spec"] for k in west)
        assert _copies(got)["west"]["phase"] == "Ready"
        assert message in _copies(got)["west"]["message"]
    else:
        assert not west & _keys(got)
        assert "west" not in _copies(got)
    # The cluster still selected is untouched either way.
    assert {k for k in observed if k.startswith("east.")} <= _keys(got)


def test_switching_to_node_local_keeps_the_claim_a_replica_mounts() -> None:
    fleet, users = (_cluster("east"),), (_replica("llm-0", "east"),)
    first = _run(_cache(), clusters=fleet, replicas=users)
    observed = _observe(first, east=_DONE)
    got = _run(_cache(**_NODE_LOCAL), clusters=fleet, replicas=users, observed=observed)
    assert "east.pvc" in _keys(got)
    assert _objects(got)["east.pvc"]["spec"] == observed["east.pvc"]["spec"]
    assert _job_key(first, "east") not in _keys(got)
    assert {"east.nodegroup", "east.localmodelcache"} <= _keys(got)


@pytest.mark.parametrize(
    ("cache", "clusters", "replicas", "reason", "says", "phase"),
    [
        pytest.param(
            _cache(**_NODE_LOCAL),
            _FLEET,
            (_replica("a", "lab"),),
            "Unsupported",
            "spec.storage.type: NodeLocal needs a KServe cluster; InferenceCluster lab serves with Native",
            "Failed",
            id="node-local-on-a-native-cluster",
        ),
        pytest.param(
            _cache(),
            _FLEET,
            (_replica("a", "gone"),),
            "ClusterNotFound",
            "InferenceCluster gone not found",
            "Pending",
            id="a-replica-on-a-missing-cluster",
        ),
        pytest.param(
            _cache(),
            (_cluster("east", published=False),),
            (_replica("a", "east"),),
            "ClusterNotReady",
            "InferenceCluster east has not published status.providerConfigRef yet",
            "Pending",
            id="a-cluster-not-reachable-yet",
        ),
    ],
)
def test_a_cluster_that_cannot_take_the_copy_is_named(
    cache: dict[str, Any],
    clusters: tuple[dict[str, Any], ...],
    replicas: tuple[dict[str, Any], ...],
    reason: str,
    says: str,
    phase: str,
) -> None:
    got = _run(cache, clusters=clusters, replicas=replicas)
    deployed = _deployed(got)
    assert (deployed["status"], deployed["reason"]) == ("STATUS_CONDITION_FALSE", reason)
    assert says in deployed["message"]
    (copy,) = _copies(got).values()
    assert (copy["phase"], copy["message"]) == (phase, says)
    assert _objects(got) == {}
    assert not _ready(got)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        pytest.param(
            {"source": {**_HF, "s3": {"uri": "s3://models/llama/"}}},
            "spec.source: must set exactly one of huggingFace, s3, http or oci",
            id="two-sources",
        ),
        pytest.param({"size": "0"}, "spec.size: '0' must be more than 0", id="size-zero"),
        pytest.param({"size": "sixteen gigs"}, "spec.size", id="size-not-a-quantity"),
        pytest.param(
            {"source": {"oci": {"image": "registry.example.com/m:1"}}, **_NODE_LOCAL},
            "spec.source.oci: needs storage type PVC",
            id="oci-node-local",
        ),
    ],
)
def test_an_invalid_cache_keeps_every_copy(spec: dict[str, Any], says: str) -> None:
    users = (_replica("llm-0", "east"),)
    observed = _observe(_run(_cache(), replicas=users), east=_DONE)
    got = _run(_cache(**spec), replicas=users, observed=observed)
    deployed = _deployed(got)
    assert (deployed["status"], deployed["reason"]) == ("STATUS_CONDITION_FALSE", "InvalidSpec")
    assert says in deployed["message"]
    assert sorted(_objects(got)) == sorted(observed)


def test_waits_for_the_fleet_and_keeps_everything() -> None:
    users = (_replica("llm-0", "east"),)
    observed = _observe(_run(_cache(), replicas=users), east=_DONE)
    got = _run(_cache(), observed=observed, fetched=False)
    assert _deployed(got)["status"] == "STATUS_CONDITION_UNKNOWN"
    assert sorted(_objects(got)) == sorted(observed)
    assert sorted(got["requirements"]["resources"]) == ["clusters", "replicas"]
    assert got["requirements"]["resources"]["replicas"]["matchLabels"] == {
        "labels": {"modelplane.ai/model-cache": "llama"}
    }


@pytest.mark.parametrize(
    "cache",
    [
        pytest.param(_cache(), id="hugging-face"),
        pytest.param(_cache(source=_HF_TOKEN), id="hugging-face-token-checked"),
        pytest.param(_cache(source={"s3": {"uri": "s3://models/x/", "secretRef": {"name": "aws"}}}), id="s3"),
        pytest.param(
            _cache(source={"http": {"url": "https://example.com/m.gguf", "secretRef": {"name": "t"}}}), id="http"
        ),
        pytest.param(
            _cache(source={"oci": {"image": "example.com/m:1"}}, storage={"pvc": {"accessMode": "ReadWriteOnce"}}),
            id="oci",
        ),
        pytest.param(_cache(**_NODE_LOCAL), id="node-local"),
    ],
)
def test_every_object_validates_against_the_real_crds(cache: dict[str, Any]) -> None:
    assert xrds.validate(cache).errors == ()
    got = _run(cache, replicas=(_replica("llm-0", "east"),))
    assert _objects(got)
    for key, obj in _objects(got).items():
        assert xrds.validate(obj).errors == (), key
        manifest = obj["spec"]["forProvider"]["manifest"]
        assert xrds.validate(manifest).errors == (), (key, manifest["kind"])


def test_a_copy_on_a_cluster_no_longer_listed_is_kept() -> None:
    cache = _cache(placement="Static", clusterSelector={"matchLabels": {"tier": "prod"}})
    observed = _observe(_run(cache), east=_DONE, west=_DONE)
    got = _run(cache, clusters=(_cluster("east"),), observed=observed)
    assert sorted(_objects(got)) == sorted(observed)
    assert _copies(got)["west"]["message"] == "kept: InferenceCluster west is not listed or cannot be read"


# --- A missing Secret: the Job checks it first, and fails at once; the function names the field ---


def _checked(secret: str, *keys: str) -> list[dict[str, Any]]:
    """The check-secret init container's variables: the names for its message, each key's value optional."""
    env: list[dict[str, Any]] = [
        {"name": "SECRET_NAME", "value": secret},
        {"name": "SECRET_NAMESPACE", "value": "ml"},
        {"name": "SECRET_KEYS", "value": ", ".join(keys)},
    ]
    ref = [{"secretKeyRef": {"name": secret, "key": k, "optional": True}} for k in keys]
    return env + [{"name": f"SECRET_VALUE_{i}", "valueFrom": r} for i, r in enumerate(ref)]


@pytest.mark.parametrize(
    ("source", "env"),
    [
        pytest.param(_HF_TOKEN, _checked("hf-token", "HF_TOKEN"), id="hugging-face-token"),
        pytest.param(
            {"huggingFace": {"repo": "org/model", "tokenSecretRef": {"name": "hf"}}},
            _checked("hf", "token"),
            id="hugging-face-default-key",
        ),
        pytest.param(_S3_KEYS, _checked("aws", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), id="s3-both-keys"),
        pytest.param(_HTTP_TOKEN, _checked("bearer", "token"), id="http-token"),
        pytest.param(_HF, None, id="hugging-face-public-none"),
        pytest.param({"s3": {"uri": "s3://models/llama/"}}, None, id="s3-pod-identity-none"),
        pytest.param({"http": {"url": "https://example.com/m.gguf"}}, None, id="http-public-none"),
        pytest.param({"oci": {"image": "example.com/m:1"}}, None, id="oci-none"),
    ],
)
def test_a_secret_is_checked_before_the_download(source: dict[str, Any], env: list[dict[str, Any]] | None) -> None:
    got = _run(_cache(source=source), replicas=(_replica("llm-0", "east"),))
    job = _of_kind(got, "Job")["east"]
    pod = job["spec"]["template"]["spec"]
    # podFailurePolicy needs restartPolicy Never, which the Job uses either way.
    assert pod["restartPolicy"] == "Never"
    if env is None:
        assert "initContainers" not in pod
        assert "podFailurePolicy" not in job["spec"]
        return
    (check,) = pod["initContainers"]
    (download,) = pod["containers"]
    assert check["name"] == "check-secret"
    # The download's own image: nothing more to pull, and it has a shell.
    assert check["image"] == download["image"]
    assert check["env"] == env
    assert check["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert "exit 3" in check["command"][-1]
    # User values reach the script only as variables.
    assert all(e.get("value", "") not in check["command"][-1] for e in env if e.get("value"))
    assert job["spec"]["podFailurePolicy"] == {
        "rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "check-secret", "operator": "In", "values": [3]}}
        ]
    }


def _failed_by_policy() -> dict[str, Any]:
    """A Job the Job controller failed by its podFailurePolicy (check-secret exited 3)."""
    message = (
        "Container check-secret for pod ml/hydrate-llama-x failed with exit code 3 matching FailJob rule at index 0"
    )
    condition = {
        "type": "Failed",
        "status": "True",
        "reason": "PodFailurePolicy",
        "message": message,
        "lastTransitionTime": _T1,
    }
    return {"failed": 1, "startTime": _T0, "conditions": [condition]}


@pytest.mark.parametrize(
    ("source", "says"),
    [
        pytest.param(
            _HF_TOKEN,
            "spec.source.huggingFace.tokenSecretRef: Secret hf-token (key HF_TOKEN) not found in namespace ml"
            " on InferenceCluster east",
            id="hugging-face",
        ),
        pytest.param(
            _S3_KEYS,
            "spec.source.s3.secretRef: Secret aws (keys AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) not found"
            " in namespace ml on InferenceCluster east",
            id="s3",
        ),
        pytest.param(
            _HTTP_TOKEN,
            "spec.source.http.secretRef: Secret bearer (key token) not found in namespace ml on InferenceCluster east",
            id="http",
        ),
    ],
)
def test_a_missing_secret_fails_the_copy_naming_the_field(source: dict[str, Any], says: str) -> None:
    cache, users = _cache(source=source), (_replica("llm-0", "east"),)
    first = _run(cache, replicas=users)
    got = _run(cache, replicas=users, observed=_observe(first, east=_failed_by_policy()))
    copy = _copies(got)["east"]
    assert copy["phase"] == "Failed"
    assert copy["message"].startswith(says)
    assert "modelplane.ai/hydration-retry" in copy["message"]
    assert copy["since"] == _T1
    deployed = _deployed(got)
    assert (deployed["status"], deployed["reason"]) == ("STATUS_CONDITION_FALSE", "SecretNotFound")
    assert says in deployed["message"]
    assert not _ready(got)
    # The claim, and what it holds, stays; so does the failed Job (it runs again only when asked to).
    assert _objects(got)["east.pvc"] == _objects(first)["east.pvc"]
    assert _job_key(got, "east") == _job_key(first, "east")


def test_a_secret_missing_on_one_cluster_is_named_before_one_deploying() -> None:
    cache = _cache(source=_S3_KEYS, placement="Static", clusterSelector={"matchLabels": {"tier": "prod"}})
    first = _run(cache)
    observed = {k: v for k, v in _observe(first, east=_failed_by_policy()).items() if k.startswith("east.")}
    got = _run(cache, observed=observed)
    assert _deployed(got)["reason"] == "SecretNotFound"
    assert "InferenceCluster east" in _deployed(got)["message"]
    assert _copies(got)["west"]["phase"] == "Pending"


def test_a_job_failed_otherwise_says_the_jobs_reason() -> None:
    # Out of retries (a download that failed four times) is not a missing Secret.
    cache, users = _cache(source=_S3_KEYS), (_replica("llm-0", "east"),)
    got = _run(cache, replicas=users, observed=_observe(_run(cache, replicas=users), east=_FAILED))
    assert "BackoffLimitExceeded" in _copies(got)["east"]["message"]
    assert _deployed(got)["reason"] == "Deployed"


def test_a_new_retry_value_is_a_new_job_and_the_same_claim() -> None:
    users = (_replica("llm-0", "east"),)
    first = _run(_cache(source=_HF_TOKEN), replicas=users)
    retried = _cache(source=_HF_TOKEN)
    retried["metadata"]["annotations"] = {"modelplane.ai/hydration-retry": "1"}
    second = _run(retried, replicas=users, observed=_observe(first, east=_failed_by_policy()))
    assert _job_key(second, "east") != _job_key(first, "east")
    assert _job_key(first, "east") not in _objects(second)
    assert _objects(second)["east.pvc"] == _objects(first)["east.pvc"]
    assert _copies(second)["east"]["phase"] == "Pending"
    # The same value again is the same Job: nothing reruns until the value changes.
    third = _run(retried, replicas=users, observed=_observe(second, east=_RUNNING))
    assert _job_key(third, "east") == _job_key(second, "east")
