"""The stand-ins: what controllers that cannot run here would report, and why each stays one.

On the workload API servers real Kubernetes runs the workloads: the
deployment, replicaset, statefulset, job, resourceclaim, PersistentVolume binder
and garbage-collector controllers, kube-scheduler (allocating DRA devices) and kwok as the kubelet
of the simulated GPU nodes (``tests/e2e/hardware.py``). What cannot run here
is stood in for:

- KServe's controller and LeaderWorkerSet's (``tests/e2e/workloads.py``):
  they create the Deployments, LeaderWorkerSets and Pods the real ones would;
  an LLMInferenceService is Ready only once its pods are;
- Envoy Gateway on every workload API server: GatewayClasses Accepted and
  Gateways Programmed with an address, HTTPRoutes accepted by their parents;
- cert-manager on every workload API server: Issuers Ready, and each
  Certificate's Secret written (``tls.crt``, ``tls.key``, ``ca.crt``, placeholder
  PEM: no Envoy runs to present or verify it) before it is Ready, so that
  provider-kubernetes copies the real way the CA's ``ca.crt`` to the control plane;
- on the control plane: provider-helm Releases Ready and Synced (no
  provider-helm runs; like ``helm install --create-namespace`` it creates the
  release's namespace on the cluster its ClusterProviderConfig names, when
  that cluster is one of ours: see ``target``), and Envoy Gateway's answers there: GatewayClass
  Accepted, Gateway Programmed with an address, HTTPRoutes, Backends and
  BackendTLSPolicies Accepted.

A cluster can be ``hold``-en: the stand-in then stops answering for it (as
when its nodes are gone), leaving whatever status is there.

LLMInferenceServices report ``status.observedGeneration`` as KServe does, and
with ``loading`` seconds set, a new or spec-changed one reports Ready False
(reason ``Loading``) for that long after its pods are first all Ready at its
generation, then True: as KServe would while the engines load the weights.
The default (0) answers once the pods are Ready.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from tests.e2e.kube import ApiError, Kube
from tests.e2e.workloads import WorkloadStandIn

# What stays a stand-in, and why (printed once per run).
STAND_INS = {
    "KServe controller": "its module tree is not buildable here: LLMInferenceServices get the Deployments and "
    "LeaderWorkerSets it would create, and are Ready from their pods",
    "LeaderWorkerSet controller": "its module is not served by the Go module proxy: the stand-in creates the "
    "leader and worker Pods it would (kube-scheduler places them)",
    "KAI scheduler": "not served by the proxy: a kube-scheduler profile named kai-scheduler places its pods "
    "(DRA allocation real; no KAI queues or gangs)",
    "Kueue (outside scenario 5)": "the real Kueue runs on workload-b for scenario 5 and manages only its "
    "namespace: elsewhere queue labels on pods are inert (no admission)",
    "Envoy Gateway and Envoy": "no Envoy binary: Gateways Programmed, routes Accepted by the stand-in",
    "provider-helm": "not run: Releases Ready and Synced by the stand-in, which creates their namespaces",
    "cert-manager": "not run: its Issuers are Ready and each Certificate's Secret is written with placeholder PEM "
    "(no Envoy runs to use it) by the stand-in, on the documented stand-in CRDs",
    "node lifecycle controller": "not run (it judges simulated heartbeats): the tier lifts a new node's "
    "not-ready taint once kwok reports it Ready",
    "GPU DRA driver": "the tier publishes each simulated node's ResourceSlice as the driver would, from the "
    "InferenceClass",
    "storage provisioner": "none runs: the model-cache scenario pre-creates a hostPath PersistentVolume of each "
    "claim's class, access modes and size (as an admin pre-provisions static volumes), which the real "
    "PersistentVolume binder binds; nothing is written to it",
    "hydration download": "no container runs: kwok turns the Job's pod Succeeded when the scenario annotates it "
    "(e2e.modelplane.ai/container-exit: 0), or Failed by check-secret's exit 3 for a missing Secret "
    "(e2e.modelplane.ai/init-container-exit: 3); the real Job controller marks the Job Complete, or Failed by "
    "its podFailurePolicy",
    "batch worker": "no engine or batch.py runs: kwok holds a ModelBatchRun's worker pod Running until the "
    "scenario writes the report its program would (e2e.modelplane.ai/termination-message), then ends it with "
    "that termination message; the real Job controller marks the Job Complete",
}

Manifest = dict[str, Any]
_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"


def _condition(kind: str, reason: str, generation: int) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": "set by the e2e workload stand-in",
        "observedGeneration": generation,
        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _generation(obj: Mapping[str, Any]) -> int:
    return int(obj.get("metadata", {}).get("generation", 1))


def _has(obj: Mapping[str, Any], *kinds: str) -> bool:
    """Whether ``obj`` already reports every condition in ``kinds`` True for its current generation."""
    conditions = {c.get("type"): c for c in obj.get("status", {}).get("conditions") or []}
    generation = _generation(obj)
    return all(
        conditions.get(k, {}).get("status") == "True"
        and int(conditions.get(k, {}).get("observedGeneration", generation)) == generation
        for k in kinds
    )


# Each rule: (apiVersion, kind) -> a function returning the status to write, or None when it is already there.
Rule = Callable[[Manifest, str], dict[str, Any] | None]


def _ready(*kinds: str) -> Rule:
    def rule(obj: Manifest, _scope: str) -> dict[str, Any] | None:
        if _has(obj, *kinds):
            return None
        return {"conditions": [_condition(k, k if k != "Ready" else "Available", _generation(obj)) for k in kinds]}

    return rule


class Loading:
    """KServe while a model loads: a new or spec-changed LLMInferenceService is Ready only ``seconds`` later.

    Time is ``clock``'s, counted from when ``loaded`` is first asked about the
    object at its current generation: the KServe stand-in asks once its pods
    are all Ready.
    """

    def __init__(self, seconds: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        # (scope, uid) -> (generation, when it was first seen at that generation)
        self._seen: dict[tuple[str, str], tuple[int, float]] = {}

    def loaded(self, obj: Mapping[str, Any], scope: str) -> bool:
        """Whether ``obj``'s model has loaded at its generation (the clock starts at the first ask)."""
        return self.seconds <= 0 or not self._loads(obj, scope, _generation(obj))

    def _loads(self, obj: Mapping[str, Any], scope: str, generation: int) -> bool:
        """Whether ``obj`` is still loading at ``generation`` (remembering when it was first seen at it)."""
        meta = obj.get("metadata", {})
        key = (scope, str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}"))
        seen = self._seen.get(key)
        if seen is None or seen[0] != generation:
            seen = self._seen[key] = (generation, self._clock())
        return self._clock() - seen[1] < self.seconds


def gateway_address(scope: str) -> str:
    """The address the stand-in gives the Gateways of ``scope`` (a workload server, or the control plane)."""
    return {"control-plane": "127.0.0.10", "workload-a": "127.0.0.11", "workload-b": "127.0.0.12"}.get(
        scope, "127.0.0.19"
    )


def _gateway(obj: Manifest, scope: str) -> dict[str, Any] | None:
    address = gateway_address(scope)
    addresses = obj.get("status", {}).get("addresses") or []
    if _has(obj, "Accepted", "Programmed") and addresses and addresses[0].get("value") == address:
        return None
    generation = _generation(obj)
    return {
        "addresses": [{"type": "IPAddress", "value": address}],
        "conditions": [
            _condition("Accepted", "Accepted", generation),
            _condition("Programmed", "Programmed", generation),
        ],
    }


def _route(obj: Manifest, _scope: str) -> dict[str, Any] | None:
    refs = obj.get("spec", {}).get("parentRefs") or []
    parents = obj.get("status", {}).get("parents") or []
    generation = _generation(obj)
    if len(parents) == len(refs) and all(
        any(c.get("type") == "Accepted" and c.get("observedGeneration") == generation for c in p.get("conditions", []))
        for p in parents
    ):
        return None
    return {
        "parents": [
            {
                "parentRef": dict(ref),
                "controllerName": _GATEWAY_CONTROLLER,
                "conditions": [
                    _condition("Accepted", "Accepted", generation),
                    _condition("ResolvedRefs", "ResolvedRefs", generation),
                ],
            }
            for ref in refs
        ]
    }


def _policy(obj: Manifest, _scope: str) -> dict[str, Any] | None:
    """A policy (BackendTLSPolicy, SecurityPolicy, BackendTrafficPolicy) accepted by the control plane's Envoy Gateway.

    Each reports per ancestor (its Gateway), the Gateway API's PolicyStatus.
    """
    generation = _generation(obj)
    for ancestor in obj.get("status", {}).get("ancestors") or []:
        if any(
            c.get("type") == "Accepted" and c.get("observedGeneration") == generation
            for c in ancestor.get("conditions", [])
        ):
            return None
    return {
        "ancestors": [
            {
                "ancestorRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "stand-in"},
                "controllerName": _GATEWAY_CONTROLLER,
                "conditions": [
                    _condition("Accepted", "Accepted", generation),
                    _condition("ResolvedRefs", "ResolvedRefs", generation),
                ],
            }
        ]
    }


# What cert-manager would write into a Certificate's Secret; placeholders, as nothing here verifies TLS.
_PLACEHOLDER_PEM = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmUyZSBzdGFuZC1pbgotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg=="
CERTIFICATE = ("cert-manager.io/v1", "Certificate")


def issue(kube: Kube, certificate: Mapping[str, Any]) -> None:
    """What cert-manager does before a Certificate is Ready: its Secret exists, with the CA beside the cert."""
    meta, spec = certificate.get("metadata", {}), certificate.get("spec", {})
    name, namespace = spec.get("secretName"), meta.get("namespace")
    if not name or not namespace or kube.get("v1", "Secret", str(name), str(namespace)) is not None:
        return
    data = {"tls.crt": _PLACEHOLDER_PEM, "tls.key": _PLACEHOLDER_PEM, "ca.crt": _PLACEHOLDER_PEM}
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": str(name), "namespace": str(namespace)},
            "type": "kubernetes.io/tls",
            "data": data,
        }
    )


LLM_INFERENCE_SERVICE = ("serving.kserve.io/v1alpha2", "LLMInferenceService")


def workload_rules(loading: Loading) -> dict[tuple[str, str], Rule]:
    """The status-only rules of a workload server (Envoy Gateway's); KServe and LWS are ``WorkloadStandIn``'s."""
    del loading  # LLMInferenceServices are answered from their pods (tests/e2e/workloads.py)
    return {
        ("gateway.networking.k8s.io/v1", "GatewayClass"): _ready("Accepted"),
        ("gateway.networking.k8s.io/v1", "Gateway"): _gateway,
        ("gateway.networking.k8s.io/v1", "HTTPRoute"): _route,
        ("cert-manager.io/v1", "Issuer"): _ready("Ready"),
        CERTIFICATE: _ready("Ready"),
    }


# Ready at once: with 0 seconds, Loading keeps no state.
WORKLOAD_RULES = workload_rules(Loading())
RELEASE = ("helm.m.crossplane.io/v1beta1", "Release")
CONTROL_PLANE_RULES: dict[tuple[str, str], Rule] = {
    RELEASE: _ready("Ready", "Synced"),
    ("gateway.networking.k8s.io/v1", "GatewayClass"): _ready("Accepted"),
    ("gateway.networking.k8s.io/v1", "Gateway"): _gateway,
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): _route,
    ("gateway.envoyproxy.io/v1alpha1", "Backend"): _ready("Accepted"),
    ("gateway.networking.k8s.io/v1", "BackendTLSPolicy"): _policy,
    ("gateway.envoyproxy.io/v1alpha1", "SecurityPolicy"): _policy,
    ("gateway.envoyproxy.io/v1alpha1", "BackendTrafficPolicy"): _policy,
}


class StandIn:
    """A thread that writes, every ``interval`` seconds, the status real controllers would."""

    def __init__(
        self, servers: Mapping[str, Kube], control_plane: str, interval: float = 0.5, loading_seconds: float = 0.0
    ) -> None:
        self._servers = dict(servers)
        self._loading = Loading(loading_seconds)
        self._workloads = {
            name: WorkloadStandIn(kube, self._loading.loaded, name)
            for name, kube in self._servers.items()
            if name != control_plane
        }
        self._workload_rules = workload_rules(self._loading)
        self._control_plane = control_plane
        self._targets: dict[str, str] = {}
        self._interval = interval
        self._held: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workload-stand-in", daemon=True)
        self.errors: list[str] = []
        self.writes = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def target(self, provider_config: str, server: str) -> None:
        """Say which of our API servers the helm ClusterProviderConfig ``provider_config`` reaches."""
        self._targets[provider_config] = server

    def hold(self, server: str) -> None:
        """Stop answering for ``server`` (its controllers are gone)."""
        self._held.add(server)

    def release(self, server: str) -> None:
        """Answer for ``server`` again."""
        self._held.discard(server)

    def loading(self, seconds: float) -> None:
        """From now on, a new or spec-changed LLMInferenceService is Ready ``seconds`` after it is first seen."""
        self._loading.seconds = seconds

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            for name, kube in self._servers.items():
                if name in self._held:
                    continue
                rules = CONTROL_PLANE_RULES if name == self._control_plane else self._workload_rules
                self._answer(name, kube, rules)
                if name in self._workloads:
                    try:
                        self._workloads[name].round()
                    except (ApiError, OSError) as err:
                        self.errors = [*self.errors[-19:], f"{name} workloads: {str(err)[:300]}"]

    def _answer(self, scope: str, kube: Kube, rules: Mapping[tuple[str, str], Rule]) -> None:
        for (api_version, kind), rule in rules.items():
            try:
                for obj in kube.list(api_version, kind):
                    status = rule(obj, scope)
                    if status is None or obj.get("metadata", {}).get("deletionTimestamp"):
                        continue
                    meta = obj["metadata"]
                    if (api_version, kind) == RELEASE:
                        self._install(obj)
                    if (api_version, kind) == CERTIFICATE:
                        issue(kube, obj)
                    kube.patch(
                        api_version,
                        kind,
                        meta["name"],
                        {"status": status},
                        namespace=meta.get("namespace"),
                        subresource="status",
                    )
                    self.writes += 1
            except (ApiError, OSError) as err:
                # A kind not served yet, an object deleted between list and patch, a server held
                # down by a test: try again on the next round, remembering the last few errors.
                self.errors = [*self.errors[-19:], f"{scope} {kind}: {str(err)[:300]}"]

    def _install(self, release: Mapping[str, Any]) -> None:
        """What provider-helm does before a release is Ready: its namespace exists on its cluster."""
        spec = release.get("spec", {})
        server = self._targets.get(str(spec.get("providerConfigRef", {}).get("name", "")))
        namespace = spec.get("forProvider", {}).get("namespace")
        if server is None or not namespace or server in self._held:
            return
        kube = self._servers[server]
        if kube.get("v1", "Namespace", str(namespace)) is None:
            kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": str(namespace)}})
