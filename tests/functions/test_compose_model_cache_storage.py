"""compose-model-cache: a copy whose spec.size exceeds its storage class's maxSize on a cluster (issue 25's bad input).

Checked as the ML team would see it: nothing new is created on that cluster, the cluster's
``status.clusters`` entry is Failed with a message naming ``spec.size`` and the cluster's
``spec.storageClasses[<name>].maxSize``, the Deployed condition says ``SizeExceedsStorage``, and a
copy already there is kept exactly as it is.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.functions.test_compose_model_cache import (
    _DONE,
    _NODE_LOCAL,
    _cache,
    _cluster,
    _copies,
    _deployed,
    _objects,
    _observe,
    _ready,
    _replica,
    _run,
)

# The validation harness, imported as the function tests import it (tests/functions/conftest.py).
import xrds  # isort: skip

_STANDARD = {"name": "standard-rwo", "maxSize": "1Ti", "default": True}
_FAST = {"name": "fast-ssd", "maxSize": "1Ti"}
_USERS = (_replica("llm-0", "east"),)


def _stored(name: str, *classes: dict[str, Any]) -> dict[str, Any]:
    cluster = _cluster(name)
    cluster["spec"]["storageClasses"] = list(classes)
    assert xrds.validate(cluster).errors == ()
    return cluster


def _pvc(storage_class: str) -> dict[str, Any]:
    return {"storage": {"type": "PVC", "pvc": {"storageClassName": storage_class}}}


@pytest.mark.parametrize(
    ("spec", "classes", "phase", "reason", "message"),
    [
        pytest.param({"size": "1Ti", **_pvc("fast-ssd")}, (_FAST,), "Pending", "Deploying", None, id="fits"),
        pytest.param(
            {"size": "2Ti", **_pvc("fast-ssd")},
            (_STANDARD, _FAST),
            "Failed",
            "SizeExceedsStorage",
            "spec.size: 2Ti exceeds the 1Ti that storage class fast-ssd on InferenceCluster east can provision "
            "(spec.storageClasses[fast-ssd].maxSize)",
            id="exceeds-the-named-class",
        ),
        pytest.param(
            {"size": "1100Gi"},
            (_FAST, _STANDARD),
            "Failed",
            "SizeExceedsStorage",
            "spec.size: 1100Gi exceeds the 1Ti that storage class standard-rwo (the default: "
            "spec.storage.pvc.storageClassName is unset) on InferenceCluster east can provision "
            "(spec.storageClasses[standard-rwo].maxSize)",
            id="exceeds-the-default-class",
        ),
        pytest.param(
            {"size": "2Ti", **_pvc("premium-rwx")},
            (_STANDARD, _FAST),
            "Pending",
            "Deploying",
            None,
            id="class-unknown-composes",
        ),
        pytest.param({"size": "2Ti"}, (_FAST,), "Pending", "Deploying", None, id="no-default-listed-composes"),
        pytest.param(
            {"size": "2Ti", **_NODE_LOCAL}, (_STANDARD,), "Pending", "Deploying", None, id="node-local-not-checked"
        ),
    ],
)
def test_a_size_past_the_storage_class_is_not_staged(
    spec: dict[str, Any], classes: tuple[dict[str, Any], ...], phase: str, reason: str, message: str | None
) -> None:
    got = _run(_cache(**spec), clusters=(_stored("east", *classes),), replicas=_USERS)
    copy = _copies(got)["east"]
    assert (copy["phase"], _deployed(got)["reason"]) == (phase, reason)
    if message is None:
        assert _objects(got), "the copy is composed"
    else:
        assert copy["message"] == message
        assert _deployed(got)["status"] == "STATUS_CONDITION_FALSE"
        assert _deployed(got)["message"] == message
        assert _objects(got) == {}, "nothing is created on a cluster the copy cannot fit"
        assert not _ready(got)


def test_only_the_cluster_too_small_is_refused() -> None:
    fleet = (_stored("east", _STANDARD), _stored("west", {**_STANDARD, "maxSize": "10Ti"}))
    got = _run(_cache(size="2Ti"), clusters=fleet, replicas=(*_USERS, _replica("llm-1", "west")))
    assert {k.split(".")[0] for k in _objects(got)} == {"west"}
    assert {n: c["phase"] for n, c in _copies(got).items()} == {"east": "Failed", "west": "Pending"}
    assert _deployed(got)["reason"] == "SizeExceedsStorage"
    assert "InferenceCluster east" in _deployed(got)["message"]


@pytest.mark.parametrize(
    ("cache", "cluster"),
    [
        pytest.param(_cache(size="2Ti"), _stored("east", _STANDARD), id="existing-copy-kept-when-the-size-grows"),
        pytest.param(
            _cache(), _stored("east", {**_STANDARD, "maxSize": "10Gi"}), id="existing-copy-kept-when-the-limit-shrinks"
        ),
    ],
)
def test_an_existing_copy_is_kept_past_the_limit(cache: dict[str, Any], cluster: dict[str, Any]) -> None:
    fitting = (_stored("east", _STANDARD),)
    observed = _observe(_run(_cache(), clusters=fitting, replicas=_USERS), east=_DONE)
    got = _run(cache, clusters=(cluster,), replicas=_USERS, observed=observed)
    # The claim, what it holds, and the Job are kept exactly as composed: never dropped, never resized.
    assert sorted(_objects(got)) == sorted(observed)
    assert all(_objects(got)[k]["spec"] == observed[k]["spec"] for k in observed)
    copy = _copies(got)["east"]
    assert copy["phase"] == "Failed"
    assert copy["message"].startswith("spec.size: ")
    assert "(spec.storageClasses[standard-rwo].maxSize)" in copy["message"]
    assert _deployed(got)["reason"] == "SizeExceedsStorage"
