"""Bring up a real control plane on loopback: etcd, API servers, Crossplane core, provider-kubernetes, our functions.

What starts, in order (each waited for with a timeout):

- etcd (its data in memory when /dev/shm exists), the control-plane API server
  and one API server per workload cluster (same etcd, own ``--etcd-prefix``);
- kube-controller-manager's garbage collector and namespace controllers for
  every API server (and on the control plane the HPA controller, with the
  aggregation layer on for the external metrics KEDA serves) (what deletes composed resources after their owner goes,
  and deleted namespaces); on each workload server also the controllers a
  cluster runs its workloads with (``WORKLOAD_CONTROLLERS``), kube-scheduler
  (DRA on: it allocates the ResourceClaims) and kwok, which plays the kubelet
  of the simulated nodes the tier creates (``tests/e2e/hardware.py``);
- the CRDs: on each workload server those a real GPU cluster has (KServe, LWS,
  KAI, Kueue, Gateway API); on the control plane provider-kubernetes' (the real
  provider runs), and provider-helm's, Envoy Gateway's, Gateway API's and the
  cloud providers', which stand in for providers that cannot run here;
- Crossplane core (``core init``, then ``core start`` with the External
  package runtime) and provider-kubernetes, both out of cluster;
- the in-memory OCI registry, with the packages ``tools/package.sh`` builds
  pushed to it; the nine Function packages installed from it, their revisions
  pointed at our functions served locally over mTLS (the External runtime's
  contract); then the Configuration package, as a user installs it.

Every process is owned by a ``Supervisor`` and stopped by PID.
"""

from __future__ import annotations

import base64
import concurrent.futures
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from modelplane import kinds
from tests import loopback
from tests.e2e.hardware import Hardware
from tests.e2e.kube import ApiError, Kube, is_true
from tests.e2e.procs import Supervisor, wait_for
from tests.e2e.standin import StandIn
from tests.e2e.tools import REPO, Tools
from tests.pki import CA, TLSDir

SHARED_CRDS = Path(os.environ.get("MODELPLANE_CRDS", REPO.parent / "shared" / "crds"))
CROSSPLANE_NAMESPACE = "crossplane-system"
PACKAGE_TAG = kinds.PACKAGE_VERSION
WORKLOADS = ("workload-a", "workload-b")
CIRCUIT_BREAKER_BURST = 1000
# How often provider-kubernetes re-reads each Ready remote object (a not-Ready one: every 30 s,
# see where it is started), and Crossplane core re-reconciles each XR, unprompted. With ~70 Objects
# at the busiest a 2 s poll is ~35 cheap reads a second.
PROVIDER_POLL = "2s"
CORE_POLL = "5s"
# What a workload cluster's kube-controller-manager runs for the scenarios: the workload
# controllers, DRA's claim controller (a claim per pod from its template), the pod garbage
# collector (pods of a lost node), what creates each namespace's default ServiceAccount
# (without it the API server refuses every pod), the PersistentVolume binder (a ModelCache's
# claim bound to the volume the scenario pre-creates) and the two protection controllers that
# lift the finalizers the API server puts on claims and volumes (without them a deleted claim
# stays Terminating, and its namespace with it). Not the node lifecycle controller: it judges
# nodes by kubelet heartbeats, which simulated nodes only fake (under load kwok's came late
# and it marked Ready pods not Ready); tests/e2e/hardware.py lifts the not-ready taint a new
# node gets once kwok reports it Ready, the one thing the tier needs of it.
WORKLOAD_CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "job-controller",
    "cronjob-controller",
    "resourceclaim-controller",
    "horizontal-pod-autoscaler-controller",
    "pod-garbage-collector-controller",
    "persistentvolume-binder-controller",
    "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
)
# The control plane's also runs the HPA controller: a KEDA ScaledObject scales a ModelDeployment through an HPA.
CONTROL_PLANE_CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "horizontal-pod-autoscaler-controller",
)
# How often the HPA controller reads its metrics (default 15 s): the autoscaling scenario waits on it.
HPA_SYNC_PERIOD = "2s"
# The client certificate the API servers' aggregation layer presents to an extension API server
# (KEDA's metrics server), and the name such a server accepts the X-Remote-* headers from.
FRONT_PROXY = "front-proxy-client"
KWOK_STAGES = Path(__file__).resolve().parent / "kwok" / "stages.yaml"
# The label kwok manages nodes by (tests/e2e/hardware.py sets it on every node it creates).
KWOK_NODE_LABEL = ("type", "kwok")
# kube-scheduler's profiles: the default scheduler, and KAI's name (no KAI runs: its pods are placed
# by the same kube-scheduler, so DRA allocation is still real; its queues and gangs are not).
SCHEDULER_PROFILES = ("default-scheduler", "kai-scheduler")

# What a GPU workload cluster has installed, as far as Modelplane composes it: KServe's
# LLMInferenceService, LeaderWorkerSet, KAI's and Kueue's queues, Gateway API, the
# InferencePool (a deployment's pool, which KServe routes to as well), llm-d's
# InferenceObjective (spec.routing.priority) and the prometheus-operator's monitors and rules
# (a cluster with spec.observability.prometheus). Only these files: the rest of each project's
# CRDs add megabytes of OpenAPI for every API server to build and nothing a scenario reads.
WORKLOAD_CRDS = (
    "kserve/serving.kserve.io_llminferenceservices.yaml",
    "lws/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    "kai-scheduler/scheduling.run.ai_queues.yaml",
    "kai-scheduler/scheduling.run.ai_podgroups.yaml",
    "kueue/kueue.x-k8s.io_clusterqueues.yaml",
    "kueue/kueue.x-k8s.io_localqueues.yaml",
    "kueue/kueue.x-k8s.io_resourceflavors.yaml",
    "gateway-api/standard/gateway.networking.k8s.io_gatewayclasses.yaml",
    "gateway-api/standard/gateway.networking.k8s.io_gateways.yaml",
    "gateway-api/standard/gateway.networking.k8s.io_httproutes.yaml",
    "gateway-api/standard/gateway.networking.k8s.io_referencegrants.yaml",
    "gateway-api-inference-extension/v1.6.0/inference.networking.k8s.io_inferencepools.yaml",
    "llm-d-router/llm-d.ai_inferenceobjectives.yaml",
    "prometheus-operator/monitoring.coreos.com_podmonitors.yaml",
    "prometheus-operator/monitoring.coreos.com_servicemonitors.yaml",
    "prometheus-operator/monitoring.coreos.com_prometheusrules.yaml",
)
# cert-manager's Issuer and Certificate (the workload gateway's TLS): not among the shared CRDs, so the
# validation tier's documented stand-in (tests/conformance/standin_crds/cert-manager.yaml) is served;
# no cert-manager runs: the stand-in (tests/e2e/standin.py) issues placeholder certificates.
WORKLOAD_STAND_IN_CRDS = (REPO / "tests" / "conformance" / "standin_crds" / "cert-manager.yaml",)
# On the control plane, the CRDs of what cannot run here stand in for the providers and
# controllers themselves (provider-helm, the cloud providers, Envoy Gateway). Printed at bring-up.
STAND_IN_CRDS = {
    "provider-helm/helm.m.crossplane.io_releases.yaml": "provider-helm's Release (no provider-helm runs)",
    "provider-helm/helm.m.crossplane.io_clusterproviderconfigs.yaml": "provider-helm's ClusterProviderConfig",
    "gateway-api/standard/gateway.networking.k8s.io_gatewayclasses.yaml": "Gateway API (no Envoy Gateway runs)",
    "gateway-api/standard/gateway.networking.k8s.io_gateways.yaml": "Gateway API (no Envoy Gateway runs)",
    "gateway-api/standard/gateway.networking.k8s.io_httproutes.yaml": "Gateway API (no Envoy Gateway runs)",
    "gateway-api/standard/gateway.networking.k8s.io_referencegrants.yaml": "Gateway API (no Envoy Gateway runs)",
    "envoy-gateway/gateway.envoyproxy.io_backends.yaml": "Envoy Gateway's Backend (no Envoy Gateway runs)",
    "gateway-api/standard/gateway.networking.k8s.io_backendtlspolicies.yaml": "Gateway API's BackendTLSPolicy "
    "(an endpoint verifying its cluster's gateway)",
    "envoy-gateway/gateway.envoyproxy.io_httproutefilters.yaml": "Envoy Gateway's HTTPRouteFilter (a service's 503)",
    "envoy-gateway/gateway.envoyproxy.io_securitypolicies.yaml": "Envoy Gateway's SecurityPolicy (caller auth)",
    "envoy-gateway/gateway.envoyproxy.io_backendtrafficpolicies.yaml": "Envoy Gateway's BackendTrafficPolicy "
    "(a service's rate limits, its tiers' health checks and retries)",
    "envoy-gateway/gateway.envoyproxy.io_clienttrafficpolicies.yaml": "Envoy Gateway's ClientTrafficPolicy (client id)",
    "provider-upjet-gcp": "GKE clusters and node pools (no provider-gcp-container runs)",
    "provider-upjet-aws": "EKS clusters and node groups (no provider-aws-eks runs)",
    "provider-upjet-azure": "AKS clusters and node pools (no provider-azure-containerservice runs)",
}


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (never provider-kubernetes' fixed 8080 and 9443)."""
    return loopback.free_port(avoid=(8080, 9443))


# libyaml's loader: the CRDs are megabytes of YAML (KServe's and LWS's 3.5 MB for each workload
# server), which PyYAML's pure-Python loader took 12 CPU-s to read, holding the GIL, at bring-up.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_documents(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """Every non-empty YAML document in ``paths`` (files, or directories searched recursively)."""
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")) if path.is_dir() else [path]
        for f in files:
            for doc in yaml.load_all(f.read_text(), Loader=_YAML_LOADER):
                if isinstance(doc, dict):
                    yield doc


def kubeconfig(name: str, server: str, ca_pem: bytes, token: str) -> str:
    """A kubeconfig for ``server`` with the CA embedded (what a provider reads from a Secret)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()},
            }
        ],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
        "current-context": name,
    }
    return yaml.safe_dump(config, sort_keys=False)


@dataclass
class ApiServer:
    """One kube-apiserver and a client for it."""

    name: str
    port: int
    kube: Kube
    kubeconfig_text: str


@dataclass
class Plane:
    """Everything one e2e run started, and how to reach it."""

    work: Path
    tools: Tools
    sup: Supervisor
    ca: CA
    control: ApiServer
    workloads: dict[str, ApiServer]
    registry: str = ""
    functions: dict[str, int] = field(default_factory=dict)
    figures: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    etcd_data: Path | None = None
    standin: StandIn | None = None
    hardware: Hardware | None = None

    def cleanup(self) -> None:
        """Remove etcd's data (it may live in memory); call once every process is stopped."""
        if self.etcd_data is not None:
            shutil.rmtree(self.etcd_data, ignore_errors=True)

    @property
    def kube(self) -> Kube:
        """The control plane's client."""
        return self.control.kube

    def kubeconfig_secret(self, workload: str, name: str, key: str = "kubeconfig") -> None:
        """Create (or replace) Secret crossplane-system/<name> holding ``workload``'s kubeconfig under ``key``."""
        text = self.workloads[workload].kubeconfig_text
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": CROSSPLANE_NAMESPACE},
            "data": {key: base64.b64encode(text.encode()).decode()},
        }
        self.kube.apply(secret)

    def connect(self, cluster: str, workload: str, secret: str, key: str = "kubeconfig") -> None:
        """Hand InferenceCluster ``cluster`` the kubeconfig of API server ``workload`` in Secret ``secret``.

        The stand-in for provider-helm is told the same: releases through
        ``cluster``'s ClusterProviderConfig land on ``workload``; and so is the
        hardware simulation: ``cluster``'s pools become nodes of ``workload``.
        """
        self.kubeconfig_secret(workload, secret, key)
        if self.standin is not None:
            self.standin.target(cluster, workload)
        if self.hardware is not None:
            self.hardware.target(cluster, workload)

    def note(self, line: str) -> None:
        """Say something about what this run substitutes or skips (printed, and kept for the summary)."""
        self.notes.append(line)
        print(f"e2e: {line}", file=sys.stderr)  # noqa: T201 - the run says what it stands in for


class BringUp:
    """The steps of ``start``, each small enough to read on its own."""

    def __init__(self, work: Path, tools: Tools, workloads: tuple[str, ...]) -> None:
        self.work = work
        self.tools = tools
        self.workload_names = workloads
        self.sup = Supervisor(work / "logs")
        self.ca = CA(work / "pki")
        self.token = secrets.token_hex(16)
        self.tokens = work / "tokens.csv"
        self.tokens.write_text(f'{self.token},admin,admin,"system:masters"\n')
        self.sa_key, self.sa_pub = self.ca.signing_key("service-account")
        self.front_proxy = self.ca.issue(FRONT_PROXY)
        self.etcd_port = 0
        self.etcd_data: Path | None = None

    # --- processes -------------------------------------------------------------------------------

    def etcd(self) -> None:
        shm = Path("/dev/shm")  # noqa: S108 - etcd syncs every write; memory makes that free
        data = Path(_mkdtemp(shm if shm.is_dir() and os.access(shm, os.W_OK) else self.work, "etcd-"))
        self.etcd_data = data
        self.etcd_port, peer = free_port(), free_port()
        client, peer_url = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{peer}"
        self.sup.start(
            "etcd",
            [
                str(self.tools.etcd),
                "--name=e2e",
                f"--data-dir={data}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=e2e={peer_url}",
                "--logger=zap",
                "--log-outputs=stderr",
            ],
        )

        def healthy() -> bool:
            with urllib.request.urlopen(f"{client}/health", timeout=2) as rsp:  # noqa: S310 - our loopback etcd
                return b'"true"' in rsp.read()

        wait_for("etcd", healthy, timeout=30)

    def apiserver(self, name: str, prefix: str) -> ApiServer:
        port = free_port()
        tls = self.ca.issue(f"apiserver-{name}")
        self.sup.start(
            f"apiserver-{name}",
            [
                str(self.tools.kube_apiserver),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                f"--etcd-prefix={prefix}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--tls-cert-file={tls.cert}",
                f"--tls-private-key-file={tls.key}",
                f"--client-ca-file={self.ca.cert_path}",
                f"--token-auth-file={self.tokens}",
                "--authorization-mode=RBAC",
                f"--service-account-key-file={self.sa_pub}",
                f"--service-account-signing-key-file={self.sa_key}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.96.0.0/16",
                # The `kubernetes` Service's endpoints cannot be a loopback address.
                "--endpoint-reconciler-type=none",
                "--enable-priority-and-fairness=false",
                "--profiling=false",
                # Streamed lists (WatchList) need etcd's RequestWatchProgress, which etcd 3.4 lacks: the
                # server then accepted a client's streamed list and ended it with an error in the
                # stream. kwok v0.8.0 (client-go v0.36) took that as a broken watch and saw a pod's or
                # node's change only at its next relist, after a backoff of up to ~60 s: pods turned
                # Running, and Jobs Complete, 20-60 s late. Off, the request is refused up front and
                # every client lists and watches.
                "--feature-gates=WatchList=false",
                # The aggregation layer, for extension API servers on loopback (KEDA's external metrics).
                f"--requestheader-client-ca-file={self.ca.cert_path}",
                f"--requestheader-allowed-names={FRONT_PROXY}",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={self.front_proxy.cert}",
                f"--proxy-client-key-file={self.front_proxy.key}",
            ],
        )
        kubeconfig_path = self.work / f"{name}.kubeconfig"
        text = kubeconfig(name, f"https://127.0.0.1:{port}", self.ca.pem, self.token)
        kubeconfig_path.write_text(text)
        kube = Kube(name, "127.0.0.1", port, self.token, self.ca.cert_path, kubeconfig_path, kubectl=self.tools.kubectl)
        return ApiServer(name, port, kube, text)

    def wait_ready(self, server: ApiServer) -> None:
        def ready() -> bool:
            self.sup.check()
            return bool(server.kube.request("GET", "/readyz") == "ok")

        wait_for(f"{server.name} /readyz", ready, timeout=90)

    def controller_manager(self, server: ApiServer, controllers: Iterable[str]) -> None:
        # The garbage collector deletes what an owner leaves behind; the namespace controller
        # empties and removes a deleted namespace (without it one stays Terminating forever).
        self.sup.start(
            f"controller-manager-{server.name}",
            [
                str(self.tools.kube_controller_manager),
                f"--kubeconfig={server.kube.kubeconfig}",
                f"--controllers={','.join(controllers)}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "--concurrent-gc-syncs=10",
                # The pod garbage collector deletes a lost node's pods once the node is gone.
                "--terminated-pod-gc-threshold=100",
                f"--horizontal-pod-autoscaler-sync-period={HPA_SYNC_PERIOD}",
            ],
        )

    def scheduler(self, server: ApiServer) -> None:
        config = self.work / f"scheduler-{server.name}.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"kubeconfig": str(server.kube.kubeconfig)},
                    "leaderElection": {"leaderElect": False},
                    "profiles": [{"schedulerName": name} for name in SCHEDULER_PROFILES],
                }
            )
        )
        self.sup.start(
            f"scheduler-{server.name}",
            [
                str(self.tools.kube_scheduler),
                f"--config={config}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
            ],
        )

    def kwok(self, server: ApiServer) -> None:
        key, value = KWOK_NODE_LABEL
        self.sup.start(
            f"kwok-{server.name}",
            [
                str(self.tools.kwok),
                f"--kubeconfig={server.kube.kubeconfig}",
                f"--config={KWOK_STAGES}",
                f"--manage-nodes-with-label-selector={key}={value}",
                f"--server-address=127.0.0.1:{free_port()}",
            ],
        )

    def functions(self, tls: TLSDir) -> dict[str, int]:
        ports: dict[str, int] = {}
        for kind in kinds.KINDS:
            port = free_port()
            ports[kind.function_ref] = port
            self.sup.start(
                kind.function,
                [sys.executable, "-m", kind.module, "--tls-certs-dir", str(tls.path), "--address", f"127.0.0.1:{port}"],
                cwd=REPO,
            )
        return ports

    def registry(self) -> str:
        proc = self.sup.start("registry", [str(self.tools.registry), "-address=127.0.0.1:0"])

        def address() -> str | None:
            self.sup.check()
            found = re.search(r"serving on (127\.0\.0\.1:\d+)", proc.log.read_text())
            return found.group(1) if found else None

        return wait_for("the OCI registry", address, timeout=30)

    def core(self, control: ApiServer, client_tls: TLSDir) -> None:
        env = {
            "KUBECONFIG": str(control.kube.kubeconfig),
            "POD_NAMESPACE": CROSSPLANE_NAMESPACE,
            "CRDS_PATH": str(self.tools.core_crds),
            "TLS_CA_SECRET_NAME": "crossplane-root-ca",
            "TLS_CLIENT_SECRET_NAME": "crossplane-tls-client",
        }
        init_log = self.sup.log_dir / "crossplane-init.log"

        def init() -> bool:
            # The first run can fail with `no matches for kind "Lock"` (its CRD is not served yet).
            with init_log.open("ab") as out:
                done = subprocess.run(
                    [str(self.tools.core), "core", "init", "--enable-webhooks=false"],
                    env={**os.environ, **env},
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=120,
                    check=False,
                )
            return done.returncode == 0

        wait_for("crossplane core init", init, timeout=180, interval=1.0)
        self.sup.start(
            "crossplane",
            [
                str(self.tools.core),
                "core",
                "start",
                "--enable-webhooks=false",
                "--package-runtime=External",
                f"--tls-client-certs-dir={client_tls.path}",
                f"--xpkg-cache-dir={_mkdtemp(self.work, 'xpkg-cache-')}",
                f"--metrics-port={free_port()}",
                f"--health-probe-port={free_port()}",
                f"--webhook-port={free_port()}",
                # Composed and required resources are watched; the poll only catches what no watch
                # reports. Shorter costs a function call per XR per interval.
                f"--poll-interval={CORE_POLL}",
                # With the default burst (100 watch events) the quickstart's InferenceCluster and
                # ModelDeployment trip Crossplane's per-XR circuit breaker within a minute of
                # `kubectl apply` (every ModelReplica status change wakes both), and then react only
                # every 30 s. Raised here so the scenarios take minutes, not tens of minutes; the
                # report of the e2e run says so.
                f"--circuit-breaker-burst={CIRCUIT_BREAKER_BURST}",
                # MODELPLANE_E2E_DEBUG=1 (or =crossplane) logs every reconcile (and why it was queued).
                *(["--debug"] if _debug("crossplane") else []),
            ],
            env=env,
        )

    def provider_kubernetes(self, control: ApiServer, tls: TLSDir) -> None:
        # v1.2.1 has no flags to move its webhook (9443) and metrics (8080) ports.
        for port in (8080, 9443):
            if loopback.listening(port):
                msg = f"port {port} is taken: provider-kubernetes needs it (is another e2e run active?)"
                raise RuntimeError(msg)
        self.sup.start(
            "provider-kubernetes",
            [
                str(self.tools.provider_kubernetes),
                # How soon a remote object's change (written by the stand-in, or by the workload
                # controllers from kwok's pods) reaches its Object. Polled: --poll re-reads a *Ready*
                # Object (PROVIDER_POLL here, 10 min by default), but v1.2.1's Object controller re-reads
                # one that is not Ready every 30 s (+-10 % jitter) whatever --poll says (a poll-interval
                # hook hard-coded in internal/controller/namespaced/object/object.go). So a workload that
                # turns Ready a few seconds after its Object first read it reaches its ModelReplica 25-30 s
                # later: every replica turning Ready, every rollout wave and every cluster's gateway waits
                # that long once, which sets the pace of most scenarios. (--sync does not help: the
                # controller drops resync events that change no spec, label or annotation.)
                f"--poll={PROVIDER_POLL}",
                # Watched: an Object with spec.watch (alpha) is reconciled as soon as its remote object
                # changes (an informer on the remote kind), Ready or not. Modelplane's Objects whose
                # readiness follows their remote object set it (modelplane.remote.wrap), as a platform
                # team that turns watches on gets (docs/install.md).
                "--enable-watches",
                f"--health-probe-bind-addr=127.0.0.1:{free_port()}",
                # MODELPLANE_E2E_DEBUG=1 (or =provider-kubernetes) logs every Object's reconcile and its requeue.
                *(["--debug"] if _debug("provider-kubernetes") else []),
            ],
            env={"KUBECONFIG": str(control.kube.kubeconfig), "TLS_SERVER_CERTS_DIR": str(tls.path)},
        )


def start_timeline(plane: Plane) -> None:
    """Record every change of the replica readiness chain's kinds, with when it was seen (``tests/e2e/timeline.py``)."""
    from tests.e2e import timeline  # noqa: PLC0415 - only when asked for

    specs = [f"{plane.control.name}={plane.control.kube.kubeconfig}:{','.join(timeline.CONTROL_PLANE_KINDS)}"]
    specs += [f"{s.name}={s.kube.kubeconfig}:{','.join(timeline.WORKLOAD_KINDS)}" for s in plane.workloads.values()]
    argv = [sys.executable, "-m", "tests.e2e.timeline", str(plane.tools.kubectl), *specs]
    plane.sup.start("timeline", argv, cwd=REPO)


def _debug(process: str) -> bool:
    """Whether MODELPLANE_E2E_DEBUG asks for ``process``'s debug log: ``1`` for all, or a comma-separated list."""
    wanted = {w.strip() for w in os.environ.get("MODELPLANE_E2E_DEBUG", "").split(",") if w.strip()}
    return "1" in wanted or process in wanted


def _mkdtemp(parent: Path, prefix: str) -> str:
    import tempfile  # noqa: PLC0415 - only here

    return tempfile.mkdtemp(prefix=f"modelplane-e2e-{prefix}", dir=parent)


def apply_crds(kube: Kube, docs: Iterable[Mapping[str, Any]]) -> list[str]:
    """Server-side apply CRDs (conversion webhooks off: no webhook service runs); return their names."""
    names: list[str] = []
    for doc in docs:
        if doc.get("kind") != "CustomResourceDefinition":
            continue
        crd = dict(doc)
        spec = dict(crd["spec"])
        if spec.get("conversion", {}).get("strategy") == "Webhook":
            spec["conversion"] = {"strategy": "None"}
        crd["spec"] = spec
        kube.apply(crd)
        names.append(str(crd["metadata"]["name"]))
    return names


def wait_established(kube: Kube, names: Iterable[str], timeout: float = 60) -> None:
    """Wait for every CRD in ``names`` to be Established."""
    pending = set(names)

    def done() -> bool:
        for name in sorted(pending):
            crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
            if is_true(crd, "Established"):
                pending.discard(name)
        return not pending

    wait_for(f"CRDs Established on {kube.name} ({len(pending)} left)", done, timeout=timeout, interval=0.5)


def ensure_namespace(kube: Kube, name: str) -> None:
    """Create namespace ``name`` if it is not there."""
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def build_packages(tools: Tools, out: Path) -> None:
    """Build the Configuration and Function packages as `make package` does."""
    done = subprocess.run(
        [str(REPO / "tools" / "package.sh"), str(out)],
        env={**os.environ, "CROSSPLANE": str(tools.crossplane_cli)},
        capture_output=True,
        text=True,
        # ~1 CPU-minute (the images, then nine xpkgs), but on a machine shared with other runs it
        # took 300 s and more: generous, it fails only a build that hangs.
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        msg = f"tools/package.sh failed ({done.returncode}):\n{done.stderr[-4000:]}"
        raise RuntimeError(msg)


def push(tools: Tools, package: Path, ref: str) -> None:
    """`crossplane xpkg push` a package to the local registry."""
    done = subprocess.run(
        [str(tools.crossplane_cli), "xpkg", "push", "-f", str(package), ref],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        msg = f"crossplane xpkg push {ref} failed ({done.returncode}): {done.stderr.strip()}"
        raise RuntimeError(msg)


def install_functions(plane: Plane, fn_tls: TLSDir) -> None:
    """Install the nine Function packages from the registry; point each revision at our local server.

    With the External package runtime Crossplane runs nothing itself: it waits
    for the runtime to publish the revision's TLS Secret and endpoint. That is
    what this does, for functions served by this process's children.
    """
    kube = plane.kube
    for kind in kinds.KINDS:
        package = _ref(plane.registry, f"function-{kind.function}")
        kube.apply(
            {
                "apiVersion": "pkg.crossplane.io/v1",
                "kind": "Function",
                "metadata": {"name": kind.function_ref},
                "spec": {"package": package},
            }
        )
    server_cert = base64.b64encode(fn_tls.cert.read_bytes()).decode()
    pending = {k.function_ref for k in kinds.KINDS}

    def publish() -> bool:
        for ref in sorted(pending):
            revisions = kube.list("pkg.crossplane.io/v1", "FunctionRevision", labels={"pkg.crossplane.io/package": ref})
            active = [r for r in revisions if r.get("spec", {}).get("desiredState") == "Active"]
            if not active:
                continue
            revision = active[0]["metadata"]["name"]
            secret = f"{revision}-tls-server"
            kube.apply(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": secret, "namespace": CROSSPLANE_NAMESPACE},
                    "type": "kubernetes.io/tls",
                    "data": {
                        "tls.crt": server_cert,
                        "tls.key": base64.b64encode(fn_tls.key.read_bytes()).decode(),
                    },
                }
            )
            kube.patch(
                "pkg.crossplane.io/v1",
                "FunctionRevision",
                revision,
                {
                    "status": {
                        "endpoint": f"127.0.0.1:{plane.functions[ref]}",
                        "tlsServerSecretName": secret,
                        "conditions": [
                            {
                                "type": "RuntimeHealthy",
                                "status": "True",
                                "reason": "HealthyPackageRevision",
                                "lastTransitionTime": _now(),
                            }
                        ],
                    }
                },
                subresource="status",
            )
            pending.discard(ref)
        return not pending

    wait_for("FunctionRevisions to publish", publish, timeout=90, interval=0.5)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def install_configuration(plane: Plane, *, skip_dependencies: bool) -> None:
    """Install the Configuration package from the registry, as a user does, and wait for its XRDs."""
    package = _ref(plane.registry, "modelplane")
    spec: dict[str, Any] = {"package": package}
    if skip_dependencies:
        spec["skipDependencyResolution"] = True
    plane.kube.apply(
        {
            "apiVersion": "pkg.crossplane.io/v1",
            "kind": "Configuration",
            "metadata": {"name": "modelplane"},
            "spec": spec,
        }
    )


def start(work: Path, tools: Tools, workloads: tuple[str, ...] = WORKLOADS) -> Plane:
    """Bring everything up; on any failure stop what started and re-raise."""
    began = time.monotonic()
    up = BringUp(work, tools, workloads)
    try:
        return _start(up, began)
    except BaseException:
        up.sup.stop()
        if up.etcd_data is not None:
            shutil.rmtree(up.etcd_data, ignore_errors=True)  # it may live in memory
        raise


def _start(up: BringUp, began: float) -> Plane:
    work, tools = up.work, up.tools
    steps = Steps(began)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
    with pool:
        packages = work / "packages"
        built = pool.submit(build_packages, tools, packages)
        fn_tls = up.ca.issue("functions")
        ports = up.functions(fn_tls)
        up.etcd()
        control = up.apiserver("control-plane", "/registry")
        servers = {name: up.apiserver(name, f"/{name}") for name in up.workload_names}
        registry = up.registry()
        for server in (control, *servers.values()):
            up.wait_ready(server)
        steps.done("API servers ready")
        plane = Plane(work, tools, up.sup, up.ca, control, servers, registry=registry, functions=ports)
        plane.etcd_data = up.etcd_data
        up.controller_manager(control, CONTROL_PLANE_CONTROLLERS)
        for server in servers.values():
            up.controller_manager(server, WORKLOAD_CONTROLLERS)
            up.scheduler(server)
            up.kwok(server)
        ensure_namespace(plane.kube, CROSSPLANE_NAMESPACE)

        # Read once for every workload server (apply_crds copies what it changes).
        workload_docs = list(yaml_documents([*(SHARED_CRDS / d for d in WORKLOAD_CRDS), *WORKLOAD_STAND_IN_CRDS]))
        plane.note(
            "stand-in CRDs on the workload servers: cert-manager's Issuer and Certificate (no cert-manager runs)"
        )

        def workload_crds(server: ApiServer) -> None:
            names = apply_crds(server.kube, workload_docs)
            wait_established(server.kube, names)

        crds_done = [pool.submit(workload_crds, s) for s in servers.values()]
        provider_crds = apply_crds(plane.kube, yaml_documents([tools.provider_kubernetes_crds]))
        up.core(control, up.ca.issue("crossplane-client"))
        steps.done("Crossplane core started")
        wait_established(plane.kube, provider_crds)
        up.provider_kubernetes(control, up.ca.issue("provider-kubernetes"))
        stand_ins = apply_crds(plane.kube, yaml_documents(SHARED_CRDS / d for d in STAND_IN_CRDS))
        for what in sorted(set(STAND_IN_CRDS.values())):
            plane.note(f"stand-in CRDs on the control plane: {what}")
        wait_established(plane.kube, stand_ins)
        for f in crds_done:
            f.result()
        steps.done("CRDs established")
        built.result()
        steps.done("packages built (tools/package.sh)")
        pushed = [
            pool.submit(push, tools, packages / f"function-{k.function}.xpkg", _ref(registry, f"function-{k.function}"))
            for k in kinds.KINDS
        ]
        push(tools, packages / "modelplane.xpkg", _ref(registry, "modelplane"))
        for f in pushed:
            f.result()
    wait_for("functions to listen", lambda: all(loopback.listening(p) for p in ports.values()), timeout=60)
    install_functions(plane, fn_tls)
    install_configuration(plane, skip_dependencies=True)
    plane.note(
        "the Configuration is installed with skipDependencyResolution: its provider dependencies "
        "(provider-helm, the cloud providers) cannot be pulled here; provider-kubernetes runs from its "
        "binary and the nine Function packages are installed from the local registry"
    )
    wait_for("the Configuration to be Healthy", lambda: _healthy(plane.kube), timeout=120, interval=0.5)
    xrds = [f"{k.plural}.{kinds.GROUP}" for k in kinds.KINDS]
    try:
        wait_for("every XRD to be Established", lambda: _established(plane.kube, xrds), timeout=60, interval=0.5)
    except TimeoutError as err:
        # Scenario 1 says which and why; the others fail on what they need.
        plane.note(str(err))
    steps.done("Configuration installed, XRDs Established")
    plane.note(
        f"Crossplane core runs with --circuit-breaker-burst={CIRCUIT_BREAKER_BURST} (default 100): "
        "with the default, XRs that require every ModelReplica or InferenceCluster trip it in a minute"
    )
    plane.figures["bring-up (s)"] = round(time.monotonic() - began, 1)
    plane.notes.append("bring-up steps (s since start): " + ", ".join(f"{k} {v}" for k, v in steps.marks.items()))
    return plane


class Steps:
    """When each bring-up step finished, in seconds since the start."""

    def __init__(self, began: float) -> None:
        self.began = began
        self.marks: dict[str, float] = {}

    def done(self, step: str) -> None:
        self.marks[step] = round(time.monotonic() - self.began, 1)


def _established(kube: Kube, xrds: list[str]) -> bool:
    return all(
        is_true(kube.get("apiextensions.crossplane.io/v2", "CompositeResourceDefinition", name), "Established")
        for name in xrds
    )


def _ref(registry: str, name: str) -> str:
    return f"{registry}/{kinds.PACKAGE_ORG}/{name}:{PACKAGE_TAG}"


def _healthy(kube: Kube) -> bool:
    try:
        config = kube.get("pkg.crossplane.io/v1", "Configuration", "modelplane")
    except ApiError:
        return False
    return is_true(config, "Installed") and is_true(config, "Healthy")
