"""compose-model-deployment with spec.modelCacheRef: where replicas go, what they are written, what waits.

Rules a user checks: new replicas prefer the clusters where the cache's copy is Ready and say so
(``decidedBy: Cache``); every replica is labelled for the cache and told where to mount it; a
replica placed where the copy is not Ready is composed (so the cache stages there) and reported
waiting (``CacheNotReady``); a missing cache is a condition naming ``spec.modelCacheRef.name``;
running replicas are never dropped because the cache is not Ready, gone, or no longer referenced.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from modelplane.scheduling import serving_shape, shape_revision
from tests.functions.test_compose_model_deployment_hold import World, _desired, _endpoint, _run, _warnings
from tests.functions.test_compose_model_deployment_hold import _replica as _plain_replica
from tests.functions.test_compose_model_deployment_hold import _xr as _plain_xr

CACHE = "llama-weights"
MOUNT = {"name": CACHE, "mountPath": f"/models/{CACHE}", "policy": "Required"}
LABEL = "modelplane.ai/model-cache"


def _xr(replicas: int = 2, **ref: str) -> dict[str, Any]:
    xr = _plain_xr(replicas)
    xr["spec"]["modelCacheRef"] = {"name": CACHE, **ref}
    return xr


def _cache(**phases: str) -> dict[str, Any]:
    clusters = [{"name": c, "phase": p} for c, p in sorted(phases.items())]
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": CACHE, "namespace": "ml"},
        "spec": {"source": {"huggingFace": {"repo": "meta-llama/Llama-3.1-8B"}}, "size": "20Gi"},
        "status": {
            "claimName": f"model-cache-{CACHE}",
            "ready": sum(p == "Ready" for p in phases.values()),
            "clusters": clusters,
        },
    }


def _replica(ordinal: int, where: str, *, ready: bool = True) -> dict[str, Any]:
    """A replica composed with the cache (its label, spec.modelCache, and the revision that includes it)."""
    out = _plain_replica(ordinal, where, ready=ready)
    out["spec"]["modelCache"] = dict(MOUNT)
    out["metadata"]["labels"][LABEL] = CACHE
    out["metadata"]["labels"]["modelplane.ai/revision"] = shape_revision(serving_shape(out["spec"]))
    return out


@dataclass
class CacheWorld(World):
    """The world of the hold tests, with the deployment's ModelCache (None: not found; fetched unless told)."""

    xr: dict[str, Any] = field(default_factory=_xr)
    cache: dict[str, Any] | None = field(default_factory=lambda: _cache(east="Ready", west="Ready"))
    cache_fetched: bool = True

    def request(self) -> Any:
        req = super().request()
        if self.cache_fetched:
            req.required_resources["cache"].SetInParent()
            if self.cache is not None:
                req.required_resources["cache"].items.add().resource.update(self.cache)
        return req


def _fresh(**kw: Any) -> CacheWorld:
    """Nothing composed yet."""
    world = CacheWorld(**kw)
    world.observed, world.replicas = {}, None
    return world


def _steady(**kw: Any) -> CacheWorld:
    """Two Ready replicas composed with the cache: llm-0 on east, llm-1 on west."""
    world = CacheWorld(**kw)
    world.observed = {
        "replica-0": _replica(0, "east"),
        "endpoint-0": _endpoint(0, "east"),
        "replica-1": _replica(1, "west"),
        "endpoint-1": _endpoint(1, "west"),
    }
    return world


def _status(got: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = got["desired"]["composite"]["resource"]["status"]
    return status


def _placements(got: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """replica -> (cluster, decidedBy, reason)."""
    return {
        p["replica"]: (p["cluster"], p.get("decidedBy", ""), p.get("reason", "")) for p in _status(got)["placements"]
    }


def _condition(got: dict[str, Any], typ: str) -> tuple[str, str, str]:
    c = next(c for c in got.get("conditions", []) if c["type"] == typ)
    return c["status"].removeprefix("STATUS_CONDITION_").title(), c.get("reason", ""), c.get("message", "")


@dataclass(frozen=True)
class Placed:
    world: Callable[[], CacheWorld]
    want: dict[str, tuple[str, str, str]]
    condition: tuple[str, str, str]


PLACED = [
    pytest.param(
        Placed(
            lambda: _fresh(xr=_xr(1, policy="Preferred"), cache=_cache(west="Ready", east="Hydrating")),
            {"llm-0": ("west", "Cache", "")},
            ("True", "CacheReady", f"ModelCache {CACHE}: no replica waits (Ready on west)"),
        ),
        id="preferred-ready-copy-wins-the-tie",
    ),
    pytest.param(
        Placed(
            lambda: _fresh(xr=_xr(1), cache=_cache(south="Ready")),
            {"llm-0": ("south", "Cache", "")},
            ("True", "CacheReady", f"ModelCache {CACHE}: no replica waits (Ready on south)"),
        ),
        id="required-ready-copy-wins-over-the-first-name",
    ),
    pytest.param(
        Placed(
            lambda: _fresh(xr=_xr(2), cache=_cache(west="Ready")),
            {"llm-0": ("west", "Cache", ""), "llm-1": ("east", "TieBreak", "CacheNotReady")},
            (
                "False",
                "CacheNotReady",
                f"ModelCache {CACHE}: 1 replica(s) wait for its copy: llm-1 on east: its copy there is Pending",
            ),
        ),
        id="required-second-replica-waits-where-the-copy-is-staged",
    ),
    pytest.param(
        Placed(
            lambda: _fresh(xr=_xr(2, policy="Preferred"), cache=_cache(west="Ready")),
            {"llm-0": ("west", "Cache", ""), "llm-1": ("east", "TieBreak", "")},
            ("True", "CacheReady", f"ModelCache {CACHE}: no replica waits (Ready on west)"),
        ),
        id="preferred-second-replica-does-not-wait",
    ),
    pytest.param(
        Placed(
            lambda: _fresh(xr=_xr(1), cache=None),
            {"llm-0": ("east", "TieBreak", "CacheNotReady")},
            (
                "False",
                "CacheNotFound",
                f"spec.modelCacheRef.name: ModelCache {CACHE} not found: new replicas wait for it (policy"
                " Required) or start without it (Preferred); running replicas are kept",
            ),
        ),
        id="missing-cache-names-the-field",
    ),
]


@pytest.mark.parametrize("case", PLACED)
def test_new_replicas_prefer_ready_copies_and_wait_for_the_others(case: Placed) -> None:
    got = _run(case.world())
    assert _placements(got) == case.want
    assert _condition(got, "CacheReady") == case.condition
    for key, replica in _desired(got).items():
        if key.startswith("replica-"):
            assert replica["metadata"]["labels"][LABEL] == CACHE
            assert replica["spec"]["modelCache"]["name"] == CACHE
            assert replica["spec"]["modelCache"]["mountPath"] == f"/models/{CACHE}"


def test_a_replica_that_says_it_waits_is_reported_waiting_with_its_own_words() -> None:
    world = _steady(cache=_cache(east="Ready", west="Hydrating"))
    world.observed["replica-1"] = _replica(1, "west", ready=False)
    world.observed["replica-1"]["status"]["conditions"].append(
        {"type": "Deployed", "status": "False", "reason": "CacheNotReady", "message": "waiting for the weights"}
    )
    got = _run(world)
    assert _placements(got)["llm-1"][2] == "CacheNotReady"
    assert _condition(got, "CacheReady")[2] == (
        f"ModelCache {CACHE}: 1 replica(s) wait for its copy: llm-1 on west: waiting for the weights"
    )


def _unref(world: CacheWorld) -> None:
    del world.xr["spec"]["modelCacheRef"]


def _delete_cache(world: CacheWorld) -> None:
    world.cache = None


def _hydrate_again(world: CacheWorld) -> None:
    world.cache = _cache(east="Hydrating", west="Failed")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_hydrate_again, id="copies-not-ready"),
        pytest.param(_delete_cache, id="cache-deleted"),
        pytest.param(_unref, id="ref-removed"),
    ],
)
def test_running_replicas_are_never_dropped_for_the_caches_sake(change: Callable[[CacheWorld], None]) -> None:
    world = _steady()
    change(world)
    got = _run(world)
    desired = _desired(got)
    for key in ("replica-0", "replica-1"):
        assert desired[key]["spec"] == world.observed[key]["spec"], key
        assert desired[key]["metadata"]["labels"][LABEL] == CACHE, key
    assert {p["replica"] for p in _status(got)["placements"]} >= {"llm-0", "llm-1"}


def test_the_engine_pointed_elsewhere_is_a_warning_naming_the_field() -> None:
    world = _fresh(xr=_xr(1))
    template = world.xr["spec"]["workers"]["template"]["spec"]
    template["containers"][0]["args"] = ["--model=meta-llama/Llama-3.1-8B"]
    got = _run(world)
    assert (
        "spec.workers.template.spec.containers[0].args: --model=meta-llama/Llama-3.1-8B is not under"
        f" spec.modelCacheRef's mount path /models/{CACHE}: the engine will not read the cache's copy"
    ) in _warnings(got)


def test_the_engine_pointed_at_the_copy_is_not_warned_about() -> None:
    world = _fresh(xr=_xr(1))
    world.xr["spec"]["workers"]["template"]["spec"]["containers"][0]["args"] = ["--model", f"/models/{CACHE}"]
    assert _warnings(_run(world)) == []


def _node_local() -> dict[str, Any]:
    cache = _cache(east="Ready", west="Ready")
    cache["spec"]["storage"] = {"type": "NodeLocal"}
    del cache["status"]["claimName"]
    return cache


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(["--model=/mnt/models"], [], id="served-path"),
        pytest.param(["--model", "/mnt/models/"], [], id="served-path-slash"),
        pytest.param(
            [f"--model=/models/{CACHE}"],
            [
                f"spec.workers.template.spec.containers[0].args: --model=/models/{CACHE} is not under where KServe"
                " mounts a NodeLocal copy /mnt/models: the engine will not read the cache's copy"
            ],
            id="mount-path",
        ),
    ],
)
def test_with_a_node_local_cache_the_engine_reads_where_kserve_mounts_it(args: list[str], want: list[str]) -> None:
    world = _fresh(xr=_xr(1), cache=_node_local())
    world.xr["spec"]["workers"]["template"]["spec"]["containers"][0]["args"] = args
    assert _warnings(_run(world)) == want


def test_the_deployment_waits_until_its_cache_is_fetched() -> None:
    world = _fresh(cache_fetched=False)
    got = _run(world)
    assert got["requirements"]["resources"]["cache"]["matchName"] == CACHE
    assert _condition(got, "Scheduled")[:2] == ("Unknown", "WaitingForFleet")
    assert _desired(got) == {}


def test_without_a_ref_nothing_is_asked_or_written_about_caches() -> None:
    world = _fresh(xr=_plain_xr(1))
    got = _run(world)
    assert "cache" not in got["requirements"]["resources"]
    assert all(c["type"] != "CacheReady" for c in got.get("conditions", []))
    (replica,) = (v for k, v in _desired(got).items() if k.startswith("replica-"))
    assert LABEL not in replica["metadata"]["labels"]
    assert "modelCache" not in replica["spec"]
    assert copy.deepcopy(replica["spec"]).keys() == _plain_replica(0, "east")["spec"].keys()
