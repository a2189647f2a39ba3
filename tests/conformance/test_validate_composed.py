"""Everything a render composes validates against the real CRDs, with ``crossplane resource validate``.

For every golden case, the real CLI's output is split into the XR (given its
spec back, so its desired status meets the whole XRD schema), each composed
resource, and the remote manifest of each provider-kubernetes ``Object``; each
is validated against its real schema (see schemas.py: our XRDs, the shared
CRDs, or the Kubernetes OpenAPI document for built-in kinds). A kind without
a schema fails. The same machinery is shown to refuse deliberately broken
resources, including a broken Deployment inside an ``Object``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.clusters.usage import Replica, UsedRef, replica_usages
from tests.conformance.cli import Verdict, require_crds, resource_validate
from tests.conformance.conftest import Rendered
from tests.conformance.openapi_crds import GVK
from tests.conformance.resources import Target, targets
from tests.conformance.schemas import REPO, MissingSchemaError, extensions, source


def _validate(binary: Path, objs: list[Target], tmp: Path) -> list[Verdict]:
    docs = [t.obj for t in objs]
    return resource_validate(binary, extensions(docs, tmp / "schemas"), docs, tmp / "run")


def test_every_rendered_resource_validates(binary: Path, cli_renders: dict[str, Rendered], tmp_path: Path) -> None:
    require_crds()
    found: list[tuple[str, Target]] = []
    for case_id, r in sorted(cli_renders.items()):
        assert r.proc.returncode == 0, f"{case_id}: {r.proc.stderr}"
        found.extend((case_id, t) for t in targets(r.case.xr, list(yaml.safe_load_all(r.proc.stdout))))
    verdicts = _validate(binary, [t for _, t in found], tmp_path)
    bad = [
        f"{c} {t.origin} {v.gvk} {v.name}: {list(v.errors)}"
        for (c, t), v in zip(found, verdicts, strict=True)
        if not v.ok
    ]
    assert bad == []
    # At least the XR of every render; each composed resource and remote manifest adds one.
    assert len(found) >= len(cli_renders)


# A namespaced XR whose render the composed resources below pretend to come from.
_XR = yaml.safe_load((REPO / "examples" / "quickstart" / "deployment.yaml").read_text())


def _composed(name: str, obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta.setdefault("namespace", "default")
    meta.setdefault("annotations", {})["crossplane.io/composition-resource-name"] = name
    return out


def _backend(endpoint: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "Backend",
        "metadata": {"name": "openai"},
        "spec": {"endpoints": [endpoint]},
    }


def _deployment(container: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "router", "namespace": "modelplane-system"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "router"}},
            "template": {"metadata": {"labels": {"app": "router"}}, "spec": {"containers": [container]}},
        },
    }


def _object(manifest: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": "remote-router"},
        "spec": {"forProvider": {"manifest": manifest}, "providerConfigRef": {"kind": "ProviderConfig", "name": "c"}},
    }


_CONTAINER = {
    "name": "router",
    "image": "ghcr.io/example/router:v1",
    "ports": [{"containerPort": 8080}],
    "resources": {"limits": {"cpu": 1, "memory": "512Mi"}},
}
_RCT: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "gpus", "namespace": "ml-team"},
    "spec": {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu.nvidia.com",
                            "count": 8,
                            "selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}],
                        },
                    }
                ]
            }
        }
    },
}
_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "router", "namespace": "modelplane-system"},
    "spec": {
        "selector": {"app": "router"},
        "ports": [
            {"name": "http", "port": 80, "targetPort": 8080},
            {"name": "named", "port": 81, "targetPort": "http"},
        ],
    },
}


# A replica's Usage of its cloud cluster, as compose-model-deployment writes it (modelplane.clusters.usage).
_CLOUD_CLUSTER = UsedRef("Cluster", "gke-us-central1", "container.gcp.m.upbound.io/v1beta1", "crossplane-system")
(_USAGE,) = replica_usages(
    Replica(0, "qwen-0", "ml-team", "qwen", "gke-us-central1", frozenset({"h200"})), [_CLOUD_CLUSTER]
).values()
# And of its cluster's ServingStack anchor, the ConfigMap that co-owns the stack's releases and Objects.
_ANCHOR = UsedRef("ConfigMap", "gke-us-central1-stack-anchor", "v1", "crossplane-system")
(_STACK_USAGE,) = replica_usages(
    Replica(0, "qwen-0", "ml-team", "qwen", "gke-us-central1", frozenset({"h200"})), [_ANCHOR]
).values()


def _usage_without_by() -> dict[str, Any]:
    out = copy.deepcopy(_USAGE)
    del out["spec"]["by"]
    out["spec"]["reason"] = "kept"
    return out


def _rct_without_request_name() -> dict[str, Any]:
    out = copy.deepcopy(_RCT)
    del out["spec"]["spec"]["devices"]["requests"][0]["name"]
    return out


@dataclass(frozen=True)
class Check:
    """A composed resource and, per origin suffix ("" itself, ".manifest" its remote manifest), None when it
    validates, else a substring of an expected error."""

    id: str
    resource: dict[str, Any]
    want: dict[str, str | None]


CHECKS = [
    Check("envoy-backend-ok", _backend({"fqdn": {"hostname": "api.openai.com", "port": 443}}), {"": None}),
    Check(
        "envoy-backend-wrong-field",
        _backend({"fqdn": {"host": "api.openai.com", "port": 443}}),
        {"": 'unknown field: "host"'},
    ),
    Check(
        "envoy-backend-port-out-of-range",
        _backend({"fqdn": {"hostname": "api.openai.com", "port": 70000}}),
        {"": "should be less than or equal to 65535"},
    ),
    Check(
        "envoy-backend-cel-rule",
        {
            **_backend({}),
            "spec": {"type": "DynamicResolver", "endpoints": [{"fqdn": {"hostname": "a.example", "port": 1}}]},
        },
        {"": "DynamicResolver type cannot have endpoints specified"},
    ),
    Check("object-wrapping-deployment-ok", _object(_deployment(_CONTAINER)), {"": None, ".manifest": None}),
    Check(
        "object-wrapping-deployment-wrong-type",
        _object(_deployment({**_CONTAINER, "imagePullPolicy": 3})),
        {"": None, ".manifest": "spec.template.spec.containers[0].imagePullPolicy: Invalid value"},
    ),
    Check(
        "object-wrapping-deployment-missing-name",
        _object(_deployment({k: v for k, v in _CONTAINER.items() if k != "name"})),
        {"": None, ".manifest": "spec.template.spec.containers[0].name: Required value"},
    ),
    Check(
        "object-wrapping-deployment-bad-quantity",
        _object(_deployment({**_CONTAINER, "resources": {"limits": {"cpu": "two"}}})),
        {"": None, ".manifest": "spec.template.spec.containers[0].resources.limits.cpu"},
    ),
    Check(
        "object-wrapping-deployment-unknown-field",
        _object({**_deployment(_CONTAINER), "spec": {**_deployment(_CONTAINER)["spec"], "replica": 2}}),
        {"": None, ".manifest": 'unknown field: "replica"'},
    ),
    Check(
        "object-itself-wrong-field",
        {
            **_object(_deployment(_CONTAINER)),
            "spec": {"forProvider": {"manifest": _deployment(_CONTAINER)}, "providerConfig": {}},
        },
        {"": 'unknown field: "providerConfig"', ".manifest": None},
    ),
    Check("resourceclaimtemplate-ok", _object(_RCT), {"": None, ".manifest": None}),
    Check(
        "resourceclaimtemplate-missing-request-name",
        _object(_rct_without_request_name()),
        {"": None, ".manifest": "spec.spec.devices.requests[0].name: Required value"},
    ),
    Check("service-int-or-string-ports", _SERVICE, {"": None}),
    Check("usage-of-a-cloud-cluster-by-a-replica-ok", _USAGE, {"": None}),
    Check("usage-of-a-stack-anchor-by-a-replica-ok", _STACK_USAGE, {"": None}),
    Check(
        "usage-across-namespaces-without-by",
        _usage_without_by(),
        {"": 'cross-namespace "spec.of" is not allowed without "spec.by" resource'},
    ),
    Check(
        "namespace-wrong-type",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "ml-team"},
            "spec": {"finalizers": "kubernetes"},
        },
        {"": "spec.finalizers: Invalid value"},
    ),
    Check(
        "composed-modelplane-xr-wrong-field",
        {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "ModelReplica",
            "metadata": {"name": "qwen-0"},
            "spec": {"replicas": 1},
        },
        {"": 'unknown field: "replicas"'},
    ),
]


@pytest.fixture(scope="module")
def check_verdicts(binary: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Verdict]]:
    """Every CHECKS resource, composed by a pretend render of the quickstart ModelDeployment, validated in one go."""
    require_crds()
    found: list[tuple[str, Target]] = []
    for c in CHECKS:
        render = [{"apiVersion": _XR["apiVersion"], "kind": _XR["kind"]}, _composed(c.id, c.resource)]
        found.extend((c.id, t) for t in targets(_XR, render) if t.origin != "xr")
    verdicts = _validate(binary, [t for _, t in found], tmp_path_factory.mktemp("checks"))
    out: dict[str, dict[str, Verdict]] = {}
    for (case_id, t), v in zip(found, verdicts, strict=True):
        out.setdefault(case_id, {})[t.origin.removeprefix(f"composed[{case_id}]")] = v
    return out


@pytest.mark.parametrize("check", [pytest.param(c, id=c.id) for c in CHECKS])
def test_validation_refuses_broken_resources(check: Check, check_verdicts: dict[str, dict[str, Verdict]]) -> None:
    got = check_verdicts[check.id]
    assert set(got) == set(check.want)
    for suffix, message in check.want.items():
        verdict = got[suffix]
        if message is None:
            assert verdict.ok, (suffix, verdict.errors)
        else:
            assert any(message in e for e in verdict.errors), (
                f"{suffix}: want an error containing {message!r}, got {list(verdict.errors)}"
            )


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param({"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelReplica"}, "apis", id="modelplane-kind"),
        pytest.param(
            {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "Backend"}, "envoy-gateway", id="shared-crd"
        ),
        pytest.param(
            {"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object"}, "provider-kubernetes", id="object"
        ),
        pytest.param(
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate"}, "kubernetes-openapi", id="builtin"
        ),
        pytest.param({"apiVersion": "v1", "kind": "Namespace"}, "kubernetes-openapi", id="builtin-core"),
        pytest.param({"apiVersion": "example.org/v1", "kind": "Widget"}, None, id="unknown-group"),
        pytest.param({"apiVersion": "gateway.envoyproxy.io/v9", "kind": "Backend"}, None, id="unserved-version"),
        pytest.param({"apiVersion": "modelplane.ai/v1alpha1", "kind": "Nope"}, None, id="unknown-modelplane-kind"),
    ],
)
def test_schema_source(obj: dict[str, Any], want: str | None, tmp_path: Path) -> None:
    require_crds()
    if want is not None:
        assert source(GVK.of(obj)) == want
        return
    with pytest.raises(MissingSchemaError, match=re.escape(str(GVK.of(obj)))):
        source(GVK.of(obj))
    with pytest.raises(MissingSchemaError):
        extensions([obj], tmp_path)
