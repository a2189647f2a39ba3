"""How the control plane reaches an InferenceCluster: its kubeconfig Secret, and the ProviderConfigs that use it.

A cloud cluster's kubeconfig is the connection Secret its provider writes; an
Existing cluster's is a Secret the platform team names, which the function
checks for the key (never reading, quoting or reporting its values).
"""

from __future__ import annotations

from dataclasses import dataclass

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.required import Requirement
from modelplane.names import (
    CONTROL_PLANE_NAMESPACE,
    HELM_PROVIDER_CONFIG_KEY,
    KUBECONFIG_KEY,
    KUBERNETES_PROVIDER_CONFIG_KEY,
    kubeconfig_secret,
)
from modelplane.remote import PROVIDER_CONFIG_KIND
from modelplane_models.inference_cluster import Cluster

KUBECONFIG = Requirement("kubeconfig", "v1", "Secret")
"""The kubeconfig Secret of an Existing cluster."""
_PROVIDER_CONFIGS = (
    ("kubernetes.m.crossplane.io/v1alpha1", KUBERNETES_PROVIDER_CONFIG_KEY),
    ("helm.m.crossplane.io/v1beta1", HELM_PROVIDER_CONFIG_KEY),
)


@dataclass(frozen=True)
class Access:
    """Where the cluster's kubeconfig is read from, and whether the cluster exists already (not provisioned)."""

    namespace: str
    name: str
    key: str
    existing: bool


def access_of(cluster: Cluster, name: str) -> Access:
    """The kubeconfig of InferenceCluster ``name`` with ``spec.cluster`` ``cluster``."""
    if cluster.source == "Existing" and cluster.existing is not None:
        ref = cluster.existing.secretRef
        return Access(ref.namespace, ref.name, ref.key or KUBECONFIG_KEY, existing=True)
    return Access(CONTROL_PLANE_NAMESPACE, kubeconfig_secret(name), KUBECONFIG_KEY, existing=False)


def request_kubeconfig(rsp: fnv1.RunFunctionResponse, access: Access) -> None:
    """Ask for an Existing cluster's Secret (a provisioned cluster's is its provider's to write)."""
    if access.existing:
        KUBECONFIG.request(rsp, name=access.name, namespace=access.namespace)


def fetched(req: fnv1.RunFunctionRequest, access: Access) -> bool:
    """Whether what ``request_kubeconfig`` asked for has been answered."""
    return not access.existing or KUBECONFIG.fetched(req)


def existing_provisioned(req: fnv1.RunFunctionRequest, access: Access) -> Condition:
    """Provisioned, for an Existing cluster: whether its Secret exists with the kubeconfig's key."""
    where = f"Secret {access.namespace}/{access.name}"
    secret = KUBECONFIG.first(req)
    if secret is None:
        return Condition(Type.PROVISIONED, Status.FALSE, Reason.KUBECONFIG_NOT_FOUND, f"{where} not found")
    # Only whether the key is there: a Secret's values are never converted, quoted or reported.
    if not any(_has_key(secret, field, access.key) for field in ("data", "stringData")):
        message = f"{where} has no key {access.key!r}"
        return Condition(Type.PROVISIONED, Status.FALSE, Reason.KUBECONFIG_NOT_FOUND, message)
    return Condition(Type.PROVISIONED, Status.TRUE, Reason.PROVISIONED, f"reached through {where} key {access.key}")


def _has_key(struct: structpb.Struct, field: str, key: str) -> bool:
    value = struct.fields.get(field)
    return value is not None and value.HasField("struct_value") and key in value.struct_value.fields


def write_provider_configs(ledger: Ledger, name: str, access: Access) -> None:
    """Compose the provider-kubernetes and provider-helm ClusterProviderConfigs, named after the cluster."""
    credentials = {
        "source": "Secret",
        "secretRef": {"namespace": access.namespace, "name": access.name, "key": access.key},
    }
    for api_version, key in _PROVIDER_CONFIGS:
        obj = {
            "apiVersion": api_version,
            "kind": PROVIDER_CONFIG_KIND,
            "metadata": {"name": name},
            "spec": {"credentials": credentials},
        }
        ledger.put(key, obj, ready=True)
