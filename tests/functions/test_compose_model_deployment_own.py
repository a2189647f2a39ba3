"""compose-model-deployment reads its composed replicas once per distinct replica: as afresh, for each deployment."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_model_deployment import own
from compose_model_deployment.own import Own, read_own
from modelplane.capacity import DeploymentKey
from modelplane.names import PLACED_BY_ANNOTATION, REPLACES_ANNOTATION, REVISION_LABEL
from tests.functions.test_compose_model_deployment import _replica_resource

LLM = DeploymentKey("ml", "llm")
OTHER = DeploymentKey("ml", "other")


def _with(body: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return out


READY = _replica_resource("llm-0", "east", ready=True, url="https://198.51.100.1", host="llm-0.ml")
CASES = [
    pytest.param(READY, id="ready-with-endpoint"),
    pytest.param(_replica_resource("llm-0", "east"), id="not-ready"),
    pytest.param(_with(READY, ("status", "conditions"), []), id="unsure-no-ready-condition"),
    pytest.param(_with(READY, ("metadata", "labels"), {"modelplane.ai/deployment": "llm"}), id="unsure-no-revision"),
    pytest.param(_with(READY, ("metadata", "labels", REVISION_LABEL), "r-other"), id="unreadable-revision"),
    pytest.param(_with(READY, ("spec", "poolName"), None), id="unreadable-no-pool"),
    pytest.param(_with(READY, ("metadata", "deletionTimestamp"), "2026-01-01T00:00:00Z"), id="going"),
    pytest.param(
        _with(
            _with(READY, ("metadata", "deletionTimestamp"), "2026-01-01T00:00:00Z"), ("spec", "workers"), "not-workers"
        ),
        id="going-unreadable",
    ),
    pytest.param(
        _with(
            READY,
            ("metadata", "annotations"),
            {PLACED_BY_ANNOTATION: '{"decidedBy":"Spread","why":"fewest replicas"}', REPLACES_ANNOTATION: "llm-1"},
        ),
        id="placed-by-and-replaces",
    ),
    pytest.param(
        _with(
            READY,
            ("status", "endpoint", "tls"),
            {"caSecretRef": {"name": "east-gateway-ca", "namespace": "crossplane-system"}, "hostname": "gw.example"},
        ),
        id="tls",
    ),
]


def _req(body: dict[str, Any]) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest()
    req.observed.resources["replica-0"].resource.update(body)
    return req


def _fresh(body: dict[str, Any], key: DeploymentKey) -> Own:
    own.forget()
    return read_own(_req(body), key)


@pytest.mark.parametrize("body", CASES)
def test_a_replica_read_again_reads_as_read_afresh(body: dict[str, Any]) -> None:
    want = _fresh(body, LLM)
    assert read_own(_req(body), LLM) == want  # remembered
    assert read_own(_req(body), LLM) == _fresh(body, LLM)


@pytest.mark.parametrize("body", CASES)
def test_the_same_replica_reads_as_each_deployments_own(body: dict[str, Any]) -> None:
    mine = read_own(_req(body), LLM)
    theirs = read_own(_req(body), OTHER)
    assert theirs == _fresh(body, OTHER)
    for replica in theirs.replicas.values():
        assert replica.occupancy.deployment == OTHER
    for held in theirs.going.values():
        assert held is None or held.deployment == OTHER
    assert mine == _fresh(body, LLM)


def test_a_replica_keeps_the_spec_of_the_call_that_reads_it() -> None:
    first, second = _req(READY), _req(READY)
    read_own(first, LLM)
    got = read_own(second, LLM).replicas[0].spec
    # A view into this call's request (what the call writes back from), never one remembered from another.
    assert got is not read_own(first, LLM).replicas[0].spec
    assert got == second.observed.resources["replica-0"].resource.fields["spec"].struct_value
