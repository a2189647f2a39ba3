"""Observe a replica's pods on its workload cluster, so its status can say why they are not serving."""

from __future__ import annotations

from typing import Any

from modelplane.names import OBSERVED_PODS_LABEL, REPLICA_LABEL
from modelplane.remote import PROVIDER_CONFIG_KIND

COLLECTION_API_VERSION = "kubernetes.m.crossplane.io/v1alpha1"


def pods_collection(*, name: str, namespace: str, provider_config: str, replica: str) -> dict[str, Any]:
    """An ObservedObjectCollection of the replica's pods.

    provider-kubernetes creates an Observe-only Object (in ``namespace``) for each pod labelled
    with the replica on the workload cluster, labelled ``modelplane.ai/pods-of: <replica>``; the
    function asks for those Objects as required resources and reads each pod from
    ``status.atProvider.manifest``.
    """
    return {
        "apiVersion": COLLECTION_API_VERSION,
        "kind": "ObservedObjectCollection",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "observeObjects": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": namespace,
                "selector": {"matchLabels": {REPLICA_LABEL: replica}},
            },
            "objectTemplate": {"metadata": {"labels": {OBSERVED_PODS_LABEL: replica}}},
            "providerConfigRef": {"kind": PROVIDER_CONFIG_KIND, "name": provider_config},
        },
    }
