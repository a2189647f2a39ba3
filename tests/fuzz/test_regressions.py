"""The inputs the fuzz campaign crashed the functions with, one case each, and what they answer now.

Each case corrupts a settled request of the example fleets (``tests/fuzz/corpus.py``)
the way a crash was found, and pins the answer: the condition naming the
field, or the warning naming the object and field, with nothing composed dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from tests.fuzz.corpus import seeds
from tests.fuzz.harness import call, composer, dropped, problems, quiet_logger
from tests.fuzz.mutate import OBSERVED, REQUIRED, XR, Mutation, Where, apply

_STATUS = {v: k for k, v in fnv1.Status.items()}


@dataclass(frozen=True)
class Case:
    """A seed, how it is corrupted, and what the answer must carry.

    Attributes:
        seed: The seed's id.
        mutations: The corruption.
        warning: A text some Warning result contains ("" for none expected).
        condition: (type, status, reason) of a condition the answer sets, if any.
        never: A text no result or condition may contain (a Secret's value).
        drops: What the answer drops: what the uncorrupted request drops itself (a scale-down's surplus).
    """

    seed: str
    mutations: tuple[Mutation, ...]
    warning: str = ""
    condition: tuple[str, str, str] | None = None
    never: str = ""
    drops: tuple[str, ...] = ()


def _replace(where: Where, path: tuple[str | int, ...], value: object) -> Mutation:
    return Mutation("replace", where, path, value)


CASES = [
    pytest.param(
        Case(
            "quickstart/ModelEndpoint/default/qwen-0",
            (_replace(Where(OBSERVED, "backend"), ("status", "conditions"), 3),),
            warning="observed composed resource 'backend' is malformed, read without the fields that do not fit: "
            "status.conditions: expected a list, got 3",
            condition=("Valid", "True", "Valid"),
        ),
        id="endpoint-conditions-a-number",
    ),
    pytest.param(
        Case(
            "quickstart/ServingStack/quickstart",
            (_replace(Where(OBSERVED, "release-envoy-gateway"), ("status", "conditions"), [1]),),
            warning="status.conditions[0]: expected an object, got 1",
        ),
        id="stack-condition-not-an-object",
    ),
    pytest.param(
        Case(
            "quickstart/ServingStack/quickstart",
            (_replace(Where(OBSERVED, "gateway"), ("status",), "Ready"),),
            warning="observed composed resource 'gateway' is malformed",
        ),
        id="stack-status-a-string",
    ),
    pytest.param(
        Case(
            "quickstart/ServingStack/quickstart",
            (Mutation("delete", Where(XR), ("spec",)),),
            condition=("Installed", "False", "InvalidSpec"),
        ),
        id="stack-without-spec",
    ),
    pytest.param(
        Case(
            "quickstart/InferenceGateway/default",
            (_replace(Where(OBSERVED, "gateway"), ("status", "addresses"), "198.51.100.1"),),
            warning="status.addresses: expected a list, got '198.51.100.1'",
        ),
        id="gateway-addresses-a-string",
    ),
    pytest.param(
        Case(
            "platform+models/InferenceCluster/us-east-kai",
            (Mutation("delete", Where(XR), ("spec", "scheduler", "kai")),),
            condition=("Provisioned", "False", "InvalidSpec"),
        ),
        id="cluster-kai-without-kai",
    ),
    pytest.param(
        Case(
            "platform+models/InferenceCluster/eks-us-west-2",
            (Mutation("null", Where(XR), ("spec", "cluster", "eks")),),
            condition=("Provisioned", "False", "InvalidSpec"),
        ),
        id="cluster-eks-without-settings",
    ),
    pytest.param(
        Case(
            "platform+models/InferenceCluster/eu-west-kueue+scheduler-status",
            (
                _replace(
                    Where(OBSERVED, "scheduler-queue"),
                    ("status", "atProvider", "manifest", "spec", "resourceGroups"),
                    "h100",
                ),
            ),
            warning="status.atProvider.manifest.spec.resourceGroups: expected a list, got 'h100'",
        ),
        id="cluster-queue-unreadable-keeps-flavors",
    ),
    pytest.param(
        Case(
            "quickstart/InferenceCluster/quickstart",
            (_replace(Where(REQUIRED, "classes", 0), ("spec",), "l4"),),
            warning="InferenceClass nvidia-l4 is malformed",
        ),
        id="cluster-class-spec-a-string",
    ),
    pytest.param(
        Case(
            "quickstart/InferenceCluster/quickstart",
            (
                # The seed's fleet has the kubeconfig Secret the healthy world assumes: this one replaces it.
                Mutation("empty-requirement", Where(REQUIRED, "kubeconfig", -1)),
                Mutation(
                    "add-item",
                    Where(REQUIRED, "kubeconfig", -1),
                    value={"kind": "Secret", "metadata": {"name": "quickstart-kubeconfig"}, "data": "c2VjcmV0"},
                ),
            ),
            condition=("Provisioned", "False", "KubeconfigNotFound"),
            never="c2VjcmV0",
        ),
        id="cluster-kubeconfig-data-a-string-never-quoted",
    ),
    pytest.param(
        Case(
            "quickstart/ModelReplica/default/qwen-0",
            (Mutation("delete", Where(XR), ("spec", "nodeSelector")),),
            condition=("Deployed", "False", "InvalidSpec"),
        ),
        id="replica-without-node-selector",
    ),
    pytest.param(
        Case(
            "quickstart/ModelReplica/default/qwen-0+pods",
            (
                _replace(
                    Where(REQUIRED, "pods", 1), ("status", "atProvider", "manifest", "status", "containerStatuses"), 3
                ),
            ),
            warning="status.atProvider.manifest.status.containerStatuses: expected a list, got 3",
        ),
        id="replica-pod-statuses-a-number",
    ),
    pytest.param(
        Case(
            "quickstart/ModelReplica/default/qwen-0",
            (_replace(Where(OBSERVED, "workload"), ("status", "atProvider", "manifest", "kind"), ["Deployment"]),),
            warning="status.atProvider.manifest.kind: expected a string, got a list",
        ),
        id="replica-remote-kind-a-list",
    ),
    pytest.param(
        Case(
            "platform+models/ModelService/ml-team/llama-8b",
            (_replace(Where(REQUIRED, "endpoints-0", 0), ("metadata", "labels"), ["a"]),),
            warning="metadata.labels: expected an object, got a list",
        ),
        id="service-endpoint-labels-a-list",
    ),
    pytest.param(
        Case(
            "platform+models/ModelService/ml-team/llama-8b",
            (_replace(Where(OBSERVED, "route"), ("status", "parents"), "gateway"),),
            warning="observed composed resource 'route' is malformed",
        ),
        id="service-route-parents-a-string",
    ),
]


_LOST_BACK = "scheduling/lost/4-back/modeldeployment-ml-team-llama-70b-lost"  # 5 Ready replicas, 3 wanted
_SURPLUS = ("endpoint-3", "endpoint-4", "replica-3", "replica-4")
_UPGRADE = "scheduling/upgrade/4-two-retired-last-surge/modeldeployment-ml-team-llama-70b-upgrade"

# Drops the never-drop fuzz property found in compose-model-deployment, one per root cause.
CASES += [
    pytest.param(
        Case(
            _LOST_BACK,
            (Mutation("delete", Where(OBSERVED, "replica-0"), ("spec", "workers", "template")),),
            warning="replica-0 is kept as it is: its observed ModelReplica cannot be read "
            "(metadata.labels[modelplane.ai/revision]: 'f0d0ce3276', but its spec is revision",
        ),
        id="deployment-corrupted-spec-is-not-an-old-revision",
    ),
    pytest.param(
        Case(
            _LOST_BACK,
            (
                Mutation("delete", Where(OBSERVED, "replica-0"), ("metadata", "labels")),
                Mutation("delete", Where(OBSERVED, "replica-0"), ("spec", "nodeSelector")),
            ),
            warning="scaling down to 3 waits until every replica's inputs can be read",
        ),
        id="deployment-unlabelled-replica-blocks-scale-down",
    ),
    pytest.param(
        Case(
            _UPGRADE,
            (_replace(Where(OBSERVED, "replica-1"), ("status", "conditions", 0), 1),),
            warning="replica-1 is kept as it is",
        ),
        id="deployment-unreadable-replica-blocks-retirement",
    ),
    pytest.param(
        Case(
            _LOST_BACK,
            (_replace(Where(OBSERVED, "replica-0"), ("status", "conditions", 0, "status"), "x"),),
            warning="scaling down to 3 waits until every replica's inputs can be read and every replica says",
        ),
        id="deployment-readiness-unknown-blocks-scale-down",
    ),
    pytest.param(
        Case(_LOST_BACK, (Mutation("drop-observed", Where(OBSERVED, "replica-0")),), drops=_SURPLUS),
        id="deployment-replica-only-listed-is-not-an-old-revision",
    ),
    pytest.param(
        Case("quickstart/ModelDeployment/default/qwen", (Mutation("drop-observed", Where(OBSERVED, "replica-0")),)),
        id="deployment-held-replica-not-observed-keeps-endpoint",
    ),
    pytest.param(
        Case(
            "scheduling/lost/3-replacement-serves/modeldeployment-ml-team-llama-70b-lost",
            (
                Mutation("drop-observed", Where(OBSERVED, "replica-0")),
                Mutation("empty-requirement", Where(REQUIRED, "replicas", -1)),
            ),
            warning="endpoint-0 is kept without traffic: its ModelReplica is neither observed nor listed",
        ),
        id="deployment-endpoint-of-an-unseen-replica-is-kept",
    ),
    pytest.param(
        Case(
            "platform+models/InferenceCluster/eu-west-kueue+scheduler-status",
            (
                Mutation(
                    "delete",
                    Where(OBSERVED, "scheduler-queue"),
                    ("status", "atProvider", "manifest", "spec", "resourceGroups", 0, "flavors"),
                ),
            ),
        ),
        id="cluster-queue-group-without-flavors-keeps-the-flavor-observers",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_crash_input_answers(case: Case) -> None:
    seed = next(s for s in seeds() if s.id == case.seed)
    req = seed.parse()
    for mutation in case.mutations:
        apply(req, mutation)
    rsp = call(composer(seed.kind), req, quiet_logger())
    assert problems(req, rsp) == []
    if all(m.where.region != XR for m in case.mutations):
        assert dropped(req, rsp) == list(case.drops)
    warnings = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]
    if case.warning:
        assert any(case.warning in w for w in warnings), warnings
    if case.never:
        assert not [r.message for r in rsp.results if case.never in r.message]
        assert not [c.message for c in rsp.conditions if case.never in c.message]
    if case.condition is not None:
        got = [(c.type, _STATUS[c.status].removeprefix("STATUS_CONDITION_").title(), c.reason) for c in rsp.conditions]
        assert case.condition in got, got
