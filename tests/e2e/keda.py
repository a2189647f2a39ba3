"""KEDA's operator and metrics API server, out of cluster against the control plane's API server.

The metrics server is an extension API server: the control plane's aggregation
layer (``--requestheader-*`` and ``--proxy-client-*`` flags, see plane.py)
proxies ``external.metrics.k8s.io`` to it through an APIService. With no Pods
and no kube-proxy here, its Service is an ExternalName one naming ``localhost``:
the aggregator dials ``https://localhost:<APIService port>`` and checks the
server's certificate against the APIService's caBundle under the Service's
name, ``keda-metrics-apiserver.keda.svc``. The operator serves the metrics
server over mutual TLS (gRPC) from the same certificate directory.
"""

from __future__ import annotations

import base64

from tests.e2e.kube import Kube, is_true
from tests.e2e.plane import Plane, apply_crds, ensure_namespace, free_port, wait_established, yaml_documents
from tests.e2e.procs import Process, wait_for

NAMESPACE = "keda"
METRICS_SERVICE = "keda-metrics-apiserver"
APISERVICE = "v1beta1.external.metrics.k8s.io"


def start(plane: Plane) -> list[Process]:
    """Install KEDA's CRDs, start the operator and the metrics server, and wait for the APIService to be Available.

    Returns the two processes, for the scenario to stop (and ``stop`` to unregister) when it is done.
    """
    kube, tools = plane.kube, plane.tools
    wait_established(kube, apply_crds(kube, yaml_documents([tools.keda_crds])))
    ensure_namespace(kube, NAMESPACE)
    tls = plane.ca.issue(
        "keda", dns=(f"{METRICS_SERVICE}.{NAMESPACE}.svc", f"keda-operator.{NAMESPACE}.svc", "localhost")
    )
    grpc, secure = free_port(), free_port()
    env = {
        "KUBECONFIG": str(kube.kubeconfig),
        "WATCH_NAMESPACE": "",
        "POD_NAMESPACE": NAMESPACE,
        "KEDA_CLUSTER_OBJECT_NAMESPACE": NAMESPACE,
    }
    operator = plane.sup.start(
        "keda-operator",
        [
            str(tools.keda_operator),
            f"--metrics-bind-address=127.0.0.1:{free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            f"--metrics-service-bind-address=127.0.0.1:{grpc}",
            f"--cert-dir={tls.path}",
            f"--ca-dir={tls.path}",
            "--zap-log-level=info",
        ],
        env=env,
    )
    kubeconfig = str(kube.kubeconfig)
    adapter = plane.sup.start(
        "keda-metrics-apiserver",
        [
            str(tools.keda_adapter),
            "--bind-address=127.0.0.1",
            f"--secure-port={secure}",
            f"--cert-dir={tls.path}",
            f"--tls-cert-file={tls.cert}",
            f"--tls-private-key-file={tls.key}",
            f"--client-ca-file={tls.ca}",
            f"--metrics-service-address=127.0.0.1:{grpc}",
            # Its own /metrics listens on every interface at --port (8080 by default: provider-kubernetes').
            f"--port={free_port()}",
            f"--lister-kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--zap-log-level=info",
        ],
        env=env,
    )
    _register(kube, secure, plane.ca.pem)
    return [operator, adapter]


def stop(plane: Plane, processes: list[Process]) -> None:
    """Unregister the APIService (an unavailable one fails discovery for every client), then stop KEDA."""
    plane.kube.delete("apiregistration.k8s.io/v1", "APIService", APISERVICE)
    for proc in processes:
        plane.sup.stop_one(proc)


def _register(kube: Kube, port: int, ca_pem: bytes) -> None:
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": METRICS_SERVICE, "namespace": NAMESPACE},
            "spec": {
                "type": "ExternalName",
                "externalName": "localhost",
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            },
        }
    )
    kube.apply(
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": APISERVICE},
            "spec": {
                "service": {"name": METRICS_SERVICE, "namespace": NAMESPACE, "port": port},
                "group": "external.metrics.k8s.io",
                "version": "v1beta1",
                "caBundle": base64.b64encode(ca_pem).decode(),
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
            },
        }
    )

    def available() -> bool:
        return is_true(kube.get("apiregistration.k8s.io/v1", "APIService", APISERVICE), "Available")

    wait_for(f"APIService {APISERVICE} Available (KEDA's metrics server)", available, timeout=120, interval=1.0)
