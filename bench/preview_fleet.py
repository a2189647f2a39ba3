"""A synthetic fleet for ``modelplane preview`` at scale: the manifests a platform and its ML teams apply.

Existing InferenceClusters with an H100 pool and an L4 pool, ModelDeployments of three
single-GPU replicas spread over the fleet, and ModelServices in front of them (one per
deployment until the services run out), with one InferenceGateway. No status is written:
with ``--assume-ready`` the preview simulates the healthy world.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

API_VERSION = "modelplane.ai/v1alpha1"
REPLICAS_PER_DEPLOYMENT = 3
_REGIONS = ("us-east", "us-west", "eu-west", "eu-central", "ap-south")


def _gpu_class(name: str, product: str, architecture: str, per_node: int, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceClass",
        "metadata": {"name": name},
        "spec": {
            "devices": [
                {
                    "name": "gpu",
                    "driver": "gpu.nvidia.com",
                    "claim": "DRA",
                    "deviceClassName": "gpu.nvidia.com",
                    "count": per_node,
                    "attributes": {"productName": {"string": product}, "architecture": {"string": architecture}},
                    "capacity": {"memory": {"value": memory}},
                }
            ]
        },
    }


def _cluster(i: int) -> dict[str, Any]:
    name = f"cluster-{i:03d}"
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceCluster",
        "metadata": {"name": name, "labels": {"modelplane.ai/fleet": "synthetic", "region": _REGIONS[i % 5]}},
        "spec": {
            "cluster": {
                "source": "Existing",
                "existing": {"secretRef": {"namespace": "crossplane-system", "name": f"{name}-kubeconfig"}},
            },
            "nodePools": [
                {"name": "h100", "className": "nvidia-h100-8", "nodeCount": 2},
                {"name": "l4", "className": "nvidia-l4-1", "nodeCount": 8},
            ],
            "scheduler": {"type": "None"},
            "serving": {"backend": "KServe"},
        },
    }


def _deployment(i: int, replicas: int) -> dict[str, Any]:
    l4 = i % 2 == 0
    product = "NVIDIA L4" if l4 else "NVIDIA H100 80GB HBM3"
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelDeployment",
        "metadata": {"name": f"model-{i:04d}", "namespace": f"team-{i % 7}"},
        "spec": {
            "replicas": replicas,
            "clusterSelector": {"matchLabels": {"modelplane.ai/fleet": "synthetic"}},
            "nodeSelector": {"cel": f'device.attributes["gpu.nvidia.com"].productName == "{product}"'},
            "workers": {
                "topology": {"tensor": 1},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "main",
                                "image": "vllm/vllm-openai:v0.11.0",
                                "args": [f"--model=org/model-{i:04d}", f"--served-model-name=model-{i:04d}"],
                                "ports": [{"name": "http", "containerPort": 8000}],
                            }
                        ]
                    }
                },
            },
        },
    }


def _service(i: int) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModelService",
        "metadata": {"name": f"model-{i:04d}", "namespace": f"team-{i % 7}"},
        "spec": {"endpoints": [{"selector": {"matchLabels": {"modelplane.ai/deployment": f"model-{i:04d}"}}}]},
    }


def _gateway() -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceGateway",
        "metadata": {"name": "default"},
        "spec": {
            "gatewayClassName": "modelplane",
            "http": {"port": 80},
            "providerConfigRef": {"name": "in-cluster"},
            # A synthetic fleet nobody calls: no key Secrets to write (a new gateway must say so).
            "auth": {"mode": "None"},
        },
    }


def manifests(clusters: int, replicas: int, services: int) -> Iterator[dict[str, Any]]:
    """The fleet's manifests: ``clusters`` clusters, ``replicas`` replicas (3 per deployment), ``services`` services.

    The last deployment has what is left of ``replicas``; a service selects one deployment.
    """
    yield _gpu_class("nvidia-h100-8", "NVIDIA H100 80GB HBM3", "Hopper", 8, "80Gi")
    yield _gpu_class("nvidia-l4-1", "NVIDIA L4", "Ada Lovelace", 1, "24Gi")
    yield _gateway()
    yield from (_cluster(i) for i in range(clusters))
    deployments = -(-replicas // REPLICAS_PER_DEPLOYMENT)
    per = REPLICAS_PER_DEPLOYMENT
    yield from (_deployment(i, min(per, replicas - per * i)) for i in range(deployments))
    yield from (_service(i) for i in range(min(services, deployments)))


def write(directory: Path, clusters: int, replicas: int, services: int) -> Path:
    """Write the fleet as one multi-document YAML file in ``directory``; return the file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(manifests(clusters, replicas, services), sort_keys=False))
    return path
