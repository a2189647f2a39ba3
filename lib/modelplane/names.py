"""Names, labels, annotations and composition keys of what Modelplane composes, in one place.

Every composition resource name (the key a function composes a resource under),
label and annotation Modelplane writes is defined here, once; a function that
needs one imports it.
"""

from __future__ import annotations

import hashlib
import re

# Every ModelReplica and ModelEndpoint a ModelDeployment composes carries this label;
# ModelServices select endpoints by it and the scale subresource's selector is built from it.
DEPLOYMENT_LABEL = "modelplane.ai/deployment"

# Every ModelReplica a ModelDeployment composes carries the revision of the serving shape it runs
# (``modelplane.scheduling.shape_revision``): a replica held at an older shape is told apart by it.
REVISION_LABEL = "modelplane.ai/revision"

# A ModelEndpoint whose replica does not serve (not Ready) is kept, annotated "false": routes give it
# weight 0 instead of dropping it, so its Backend does not churn on every readiness flap.
SERVING_ANNOTATION = "modelplane.ai/serving"

# A ModelReplica leaving a draining cluster whose replacement cannot be placed carries why (set by its
# ModelDeployment): the InferenceCluster reads it from the ModelReplicas it already lists for its drain status.
CANNOT_MOVE_ANNOTATION = "modelplane.ai/cannot-move"

# Every ModelReplica a ModelDeployment composes carries the InferenceCluster it runs on (``cluster_label``),
# so each InferenceCluster asks Crossplane for its own replicas by label instead of the whole fleet's.
CLUSTER_LABEL = "modelplane.ai/cluster"


# --- The replicas of a ModelDeployment ---
# Replica ``i`` of deployment ``d`` is ``d-i`` when ``d`` is a DNS label and the result fits in 63
# characters. Otherwise (a name with dots, or a long one) it is ``<d, sanitised and cut>-<8 hex digits
# of sha256(d)>-i``, so two deployments whose sanitised names collide still get different replicas.
# Names depend only on the deployment's name and the ordinal: they never change across reconciles.

MAX_NAME = 63
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_UNSAFE = re.compile(r"[^a-z0-9-]+")
_ORDINAL = re.compile(r"-(0|[1-9][0-9]*)$")


def replica_name(deployment: str, ordinal: int) -> str:
    """The name of replica ``ordinal`` of ``deployment``.

    Args:
        deployment: The ModelDeployment's name.
        ordinal: The replica's ordinal, from 0.

    Returns:
        A DNS label of at most 63 characters.

    Raises:
        ValueError: ``ordinal`` is negative.
    """
    if ordinal < 0:
        msg = f"a replica ordinal must not be negative, not {ordinal}"
        raise ValueError(msg)
    suffix = f"-{ordinal}"
    if _DNS_LABEL.match(deployment) and len(deployment) + len(suffix) <= MAX_NAME:
        return deployment + suffix
    digest = hashlib.sha256(deployment.encode()).hexdigest()[:8]
    room = MAX_NAME - len(suffix) - len(digest) - 1
    base = _UNSAFE.sub("-", deployment.lower())[:room].strip("-")
    return f"{base}-{digest}{suffix}" if base else f"r{digest}{suffix}"


def replica_ordinal(deployment: str, name: str) -> int | None:
    """The ordinal of a replica named by ``replica_name``, or None for any other name."""
    match = _ORDINAL.search(name)
    if match is None:
        return None
    ordinal = int(match.group(1))
    return ordinal if replica_name(deployment, ordinal) == name else None


def replica_key(ordinal: int) -> str:
    """The composition resource name of a deployment's replica ``ordinal``."""
    return f"replica-{ordinal}"


def endpoint_key(ordinal: int) -> str:
    """The composition resource name of the endpoint of replica ``ordinal``."""
    return f"endpoint-{ordinal}"


_REPLICA_KEY = re.compile(r"replica-(0|[1-9][0-9]*)")


def replica_key_ordinal(key: str) -> int | None:
    """The ordinal of a composition resource name made by ``replica_key``, or None for any other name."""
    match = _REPLICA_KEY.fullmatch(key)
    return int(match.group(1)) if match else None


# --- The remote objects of a ModelReplica (compose-model-replica) ---

# Every object a ModelReplica puts on its workload cluster, and every pod, carries the replica's
# name; workloads and pods also carry their role (unified, prefill, decode). Pod selectors use both.
REPLICA_LABEL = "modelplane.ai/replica"
ROLE_LABEL = "modelplane.ai/role"

# The node label that pins a replica's pods to its pool: the platform sets it to the pool's
# name (spec.nodePools[].name) on every node of the pool (compose-inference-cluster on the node
# pools it provisions; the platform team on the nodes of an Existing cluster).
POOL_LABEL = "modelplane.ai/pool"

# The Objects provider-kubernetes creates for the pods a replica's ObservedObjectCollection finds
# carry this label (value: the replica's name); the replica's function reads them back.
OBSERVED_PODS_LABEL = "modelplane.ai/pods-of"
# On an Observe-only Object of a scheduler's status object named by another (a Kueue flavor by its
# ClusterQueue): that object's name (an annotation: a ClusterQueue's name may exceed a label's 63).
OBSERVED_FOR_ANNOTATION = "modelplane.ai/observed-for"

# The Gateway the ServingStack runs on every workload cluster; replica routes attach to it
# (its listener must allow routes from every namespace).
WORKLOAD_GATEWAY_NAME = "modelplane"
WORKLOAD_GATEWAY_NAMESPACE = "modelplane-system"

# Room left in a workload name for what controllers append to pod names (LeaderWorkerSet: -<group>-<index>).
_MAX_WORKLOAD = 52


def remote_key(kind: str, role: str = "") -> str:
    """The composition resource name of a ModelReplica's remote object of ``kind`` (and ``role``)."""
    return f"{kind}-{role}" if role else kind


# provider-kubernetes refuses an ObservedObjectCollection named 64 characters or more (its CRD's rule);
# any other object's name is a DNS subdomain of at most 253.
MAX_COLLECTION_NAME = 63
_MAX_SUBDOMAIN = 253


def object_name(replica: str, key: str, limit: int = _MAX_SUBDOMAIN) -> str:
    """The name of the provider-kubernetes Object (in the replica's namespace) that carries ``key``.

    ``<replica>-<key>``; one longer than ``limit`` is cut and given a hash suffix, so it stays
    stable and unique (pass ``MAX_COLLECTION_NAME`` for the replica's ObservedObjectCollection).
    """
    name = f"{replica}-{key}"
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: limit - len(digest) - 1].rstrip('-.')}-{digest}"


def workload_name(replica: str, role: str) -> str:
    """The name of a role's workload, Service, claim template and PodGroup on the workload cluster.

    A unified replica's objects take the replica's name; a disaggregated replica's are
    ``<replica>-prefill`` and ``<replica>-decode``. The name is a DNS-1035 label short enough
    for the pod names controllers derive from it; a longer one is cut and given a hash suffix.
    """
    name = replica if role == "unified" else f"{replica}-{role}"
    if not re.match(r"^[a-z]", name):
        name = f"r{name}"
    if len(name) <= _MAX_WORKLOAD:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: _MAX_WORKLOAD - len(digest) - 1].rstrip('-')}-{digest}"


# Every replica is a virtual host on its cluster's gateway, named under this suffix. Nothing
# resolves these names: the control plane connects to the gateway's address and sends the
# replica's host as the Host header, and the replica's route on the gateway matches it.
REPLICA_HOST_SUFFIX = "replicas.modelplane.ai"
_MAX_LABEL = 63


def replica_host(replica: str, namespace: str) -> str:
    """The virtual host of a replica on its cluster's gateway: ``<replica>.<namespace>.replicas.modelplane.ai``.

    Each part is one DNS label: a replica name that is not one (too long, or with dots) is
    cut and given a hash suffix.
    """
    return f"{bounded_name(replica, _MAX_LABEL)}.{bounded_name(namespace, _MAX_LABEL)}.{REPLICA_HOST_SUFFIX}"


# InferenceCluster and ServingStack are cluster-scoped; the namespaced resources they compose
# (cloud clusters, node pools, Helm Releases, Objects) and the cloud clusters' kubeconfig
# Secrets live in Crossplane's own namespace.
CONTROL_PLANE_NAMESPACE = "crossplane-system"
# The key of the kubeconfig in a provisioned cluster's connection Secret.
KUBECONFIG_KEY = "kubeconfig"


def bounded_name(name: str, limit: int, *, alnum: bool = False) -> str:
    """``name`` if it fits in ``limit`` characters, else a cut of it plus 5 hex digits of its hash.

    With ``alnum`` only lowercase letters and digits are kept (e.g. AKS node pool names).
    """
    clean = re.sub("[^a-z0-9]" if alnum else "[^a-z0-9-]", "", name.lower())
    if clean == name and len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:5]
    sep = "" if alnum else "-"
    head = clean[: limit - len(digest) - len(sep)].strip("-")
    return f"{head}{sep}{digest}" if head else f"x{digest}"


def cluster_label(cluster: str) -> str:
    """The ``CLUSTER_LABEL`` value of InferenceCluster ``cluster``: its name, cut and hashed when not a label value.

    A cluster-scoped name may be 253 characters with dots, a label value at most 63 without: two
    clusters may then share a value, so readers still check ``spec.inferenceClusterRef``.
    """
    return bounded_name(cluster, _MAX_LABEL)


def kubeconfig_secret(cluster: str) -> str:
    """The connection Secret (in ``CONTROL_PLANE_NAMESPACE``) of a provisioned cluster."""
    return bounded_name(f"{cluster}-kubeconfig", 253)


# Composition keys of the routing kinds: an InferenceGateway's release, class, Gateway and certificate
# grant (a ServingStack's GatewayClass and Gateway take the same two keys); a ModelEndpoint's Backend;
# a ModelService's HTTPRoute.
GATEWAY_RELEASE_KEY = "envoy-gateway"
GATEWAY_CLASS_KEY = "gateway-class"
GATEWAY_KEY = "gateway"
CERTIFICATE_GRANT_KEY = "certificate-grant"
BACKEND_KEY = "backend"
ROUTE_KEY = "route"
# The HTTPRouteFilter a ModelService's route answers 503 with while no endpoint serves.
UNAVAILABLE_KEY = "unavailable"
# Caller auth: an InferenceGateway's SecurityPolicy, the ClientTrafficPolicy that clears the client-id
# header, and the ReferenceGrant to its API key Secrets; a ModelService's SecurityPolicy (spec.access).
GATEWAY_AUTH_KEY = "auth"
CLIENT_ID_POLICY_KEY = "client-id"
KEYS_GRANT_KEY = "auth-keys-grant"
ACCESS_KEY = "access"
# A ModelService's BackendTrafficPolicy (spec.limits, and the health checks and retries of its tiers).
TRAFFIC_KEY = "traffic"
# A ModelService's own Backend copy (spec.fallback) of each endpoint of its fallback tier: fallback-<endpoint>.
FALLBACK_KEY_PREFIX = "fallback-"
# A ModelEndpoint's HTTPRouteFilter injecting its spec.credentials.
CREDENTIALS_KEY = "credentials"
# A token-limited ModelService's AIGatewayRoute (in place of its HTTPRoute) and one AIServiceBackend per
# endpoint Backend it routes to (``ai-backend-<endpoint>``); an InferenceGateway's Envoy AI Gateway releases.
AI_ROUTE_KEY = "ai-route"
_AI_BACKEND_PREFIX = "ai-backend-"
AI_GATEWAY_CRDS_RELEASE_KEY = "ai-gateway-crds"
AI_GATEWAY_RELEASE_KEY = "ai-gateway"


def ai_backend_key(endpoint: str) -> str:
    """The composition key of the AIServiceBackend wrapping ModelEndpoint ``endpoint``'s Backend."""
    return f"{_AI_BACKEND_PREFIX}{endpoint}"


def is_ai_backend_key(key: str) -> bool:
    """Whether ``key`` is a ModelService's AIServiceBackend."""
    return key.startswith(_AI_BACKEND_PREFIX)


def ai_backend_name(service: str, endpoint: str) -> str:
    """ModelService ``service``'s AIServiceBackend wrapping ModelEndpoint ``endpoint``'s Backend (same namespace).

    One per service, as its fallback Backend copies are: two services routing to one endpoint through
    the AI gateway must not compose the same object (and each attaches its own BackendSecurityPolicy).
    """
    return bounded_name(f"{service}-ai-{endpoint}", 253)


# A service's BackendSecurityPolicy on the AIServiceBackend of an endpoint with spec.credentials.
_AI_CREDENTIALS_PREFIX = "ai-credentials-"


def ai_credentials_key(endpoint: str) -> str:
    """The composition key of the BackendSecurityPolicy injecting ModelEndpoint ``endpoint``'s credentials."""
    return f"{_AI_CREDENTIALS_PREFIX}{endpoint}"


def is_ai_credentials_key(key: str) -> bool:
    """Whether ``key`` is a ModelService's BackendSecurityPolicy for an AIServiceBackend."""
    return key.startswith(_AI_CREDENTIALS_PREFIX)


# A ModelEndpoint with spec.tls: the copy of its upstream's CA certificate and the BackendTLSPolicy.
UPSTREAM_CA_KEY = "upstream-ca"
BACKEND_TLS_POLICY_KEY = "backend-tls"


def upstream_ca_name(endpoint: str) -> str:
    """The Secret beside a ModelEndpoint holding its upstream's CA certificate."""
    return bounded_name(f"{endpoint}-upstream-ca", 253)


# Helm refuses a release name over 53 characters; provider-helm names the release after the Release resource.
MAX_HELM_RELEASE = 53


def helm_release_name(owner: str, component: str) -> str:
    """The Helm release (and Release resource) of ``owner``'s ``component``: ``<owner>-<component>``, cut to 53."""
    return bounded_name(f"{owner}-{component}", MAX_HELM_RELEASE)


def gateway_release_name(gateway: str) -> str:
    """The Helm release (and Release resource) that installs Envoy Gateway for InferenceGateway ``gateway``."""
    return helm_release_name(gateway, "envoy-gateway")


def auth_policy_name(gateway: str) -> str:
    """The SecurityPolicy authenticating callers of InferenceGateway ``gateway`` (beside its Gateway)."""
    return bounded_name(f"{gateway}-auth", 253)


def client_id_policy_name(gateway: str) -> str:
    """The ClientTrafficPolicy that clears the client-id header on InferenceGateway ``gateway``."""
    return bounded_name(f"{gateway}-client-id", 253)


def keys_grant_name(gateway: str) -> str:
    """The ReferenceGrant letting InferenceGateway ``gateway``'s SecurityPolicy read its API key Secrets."""
    return bounded_name(f"{gateway}-api-keys", 253)


def traffic_policy_name(service: str) -> str:
    """The BackendTrafficPolicy on ModelService ``service``'s route (``modelplane.routing.traffic``)."""
    return bounded_name(f"{service}-traffic", 253)


def fallback_backend_name(service: str, endpoint: str) -> str:
    """ModelService ``service``'s fallback Backend copy of ModelEndpoint ``endpoint`` (``modelplane.routing.tiers``)."""
    return bounded_name(f"{service}-fallback-{endpoint}", 253)


def credentials_filter_name(endpoint: str) -> str:
    """The HTTPRouteFilter injecting ModelEndpoint ``endpoint``'s ``spec.credentials`` upstream."""
    return bounded_name(f"{endpoint}-credentials", 253)


def access_policy_name(service: str) -> str:
    """The SecurityPolicy on ModelService ``service``'s route allowing its ``spec.access.clients``."""
    return bounded_name(f"{service}-access", 253)


def certificate_grant_name(gateway: str) -> str:
    """The ReferenceGrant letting InferenceGateway ``gateway``'s Gateway read its certificate Secret."""
    return f"{gateway}-gateway-certificate"


def service_path(namespace: str, name: str) -> str:
    """The path prefix a ModelService is reached at on its gateway."""
    return f"/{namespace}/{name}"


# --- What a ModelDeployment writes on its ModelReplicas ---

# On a replica placed because another's cluster is lost: that replica's name (failover holds while it is lost).
REPLACES_ANNOTATION = "modelplane.ai/replaces"
# Why the replica was placed on its cluster, written when it is placed (JSON: ``decidedBy`` and ``why``).
PLACED_BY_ANNOTATION = "modelplane.ai/placed-by"
# A replica's priority (its deployment's FleetPriorityClass): the value, which orders who keeps capacity and
# quota first, and the class's name, which a FleetQuota's status counts by (both absent for no priority).
PRIORITY_ANNOTATION = "modelplane.ai/priority"
PRIORITY_CLASS_ANNOTATION = "modelplane.ai/priority-class"
# On a replica whose namespace consents to give way to higher priorities for physical capacity: every
# FleetQuota of the namespace says ``preemption: LowerPriority`` (the value). Its cluster may then list it
# in ``status.capacity.preempted`` for a replica of a higher priority; absent otherwise.
PREEMPTION_ANNOTATION = "modelplane.ai/preemption"
PREEMPTION_LOWER_PRIORITY = "LowerPriority"


# --- Composition keys of an InferenceCluster ---

# The cloud cluster, EKS's access entry, and one node pool per ``spec.nodePools[]`` entry (plus the system pool).
CLOUD_CLUSTER_KEY = "cluster"
EKS_ACCESS_KEY = "cluster-auth"
_POOL_PREFIX = "nodepool-"
# The ClusterProviderConfigs of provider-kubernetes and provider-helm that reach the cluster.
KUBERNETES_PROVIDER_CONFIG_KEY = "kubernetes-provider-config"
HELM_PROVIDER_CONFIG_KEY = "helm-provider-config"
SERVING_STACK_KEY = "serving-stack"
# Observe-only Objects of the workload scheduler's status objects (a KAI Queue, a Kueue ClusterQueue...).
_SCHEDULER_PREFIX = "scheduler-"


def pool_key(pool: str) -> str:
    """The composition resource name of a cloud cluster's node pool."""
    return f"{_POOL_PREFIX}{pool}"


def is_cloud_key(key: str) -> bool:
    """Whether ``key`` names a resource of a cloud cluster (the cluster, its access entry, a node pool)."""
    return key in (CLOUD_CLUSTER_KEY, EKS_ACCESS_KEY) or key.startswith(_POOL_PREFIX)


def pool_of_key(key: str) -> str | None:
    """The pool whose node pool ``key`` (made by ``pool_key``) names; None for any other key."""
    return key[len(_POOL_PREFIX) :] if key.startswith(_POOL_PREFIX) and len(key) > len(_POOL_PREFIX) else None


def scheduler_key(watch: str) -> str:
    """The composition resource name of the Observe-only Object of a scheduler's status object ``watch``."""
    return f"{_SCHEDULER_PREFIX}{watch}"


def is_scheduler_key(key: str) -> bool:
    """Whether ``key`` names an Observe-only Object of the cluster's workload scheduler."""
    return key.startswith(_SCHEDULER_PREFIX)


# --- A ModelDeployment's Usages: the cloud objects its replicas run on, kept until the replicas are gone ---
# One Crossplane Usage per ModelReplica on a cloud cluster and per cloud object the replica depends on
# (``modelplane.clusters.usage``). Its composition key is ``usage-<ordinal>-<kind>-<object>``; it is
# named ``<replica>-<kind>-<object>`` (lowercase kind), in the replica's namespace, cut and hashed to a
# DNS subdomain: unique there, as the replica's name is, and stable across reconciles.
_USAGE_KEY = re.compile(r"usage-(0|[1-9][0-9]*)-.+")


def usage_key(ordinal: int, kind: str, name: str) -> str:
    """The composition resource name of replica ``ordinal``'s Usage of the cloud object ``kind`` ``name``."""
    return f"usage-{ordinal}-{kind.lower()}-{name}"


def usage_key_ordinal(key: str) -> int | None:
    """The ordinal of the replica a composition key made by ``usage_key`` protects for; None for any other key."""
    match = _USAGE_KEY.fullmatch(key)
    return int(match.group(1)) if match else None


def usage_name(replica: str, kind: str, name: str) -> str:
    """The Usage (in the replica's namespace) by which ModelReplica ``replica`` keeps cloud object ``kind`` ``name``."""
    return bounded_name(f"{replica}-{kind.lower()}-{name}", _MAX_SUBDOMAIN)


# --- Composition keys of a ServingStack ---


def release_key(component: str) -> str:
    """The composition resource name of a component's Helm Release."""
    return f"release-{component}"


def is_release_key(key: str) -> bool:
    """Whether ``key`` names a component's Helm Release."""
    return key.startswith("release-")


# Observe-only Objects of what says a component the cluster runs itself (mode Existing) is there.
_PROBE_PREFIX = "component-"


def probe_key(component: str, probe: str) -> str:
    """The composition resource name of the Observe-only Object of ``component``'s ``probe`` (its slug)."""
    return f"{_PROBE_PREFIX}{component}-{probe}"


def is_probe_key(key: str) -> bool:
    """Whether ``key`` names an Observe-only Object of an Existing component."""
    return key.startswith(_PROBE_PREFIX)


# The ConfigMap that co-owns everything a ServingStack composes in CONTROL_PLANE_NAMESPACE, which the
# ModelReplicas on its cluster keep with Usages (compose_serving_stack.anchor).
STACK_ANCHOR_KEY = "stack-anchor"


def stack_anchor(stack: str) -> str:
    """The ConfigMap (in ``CONTROL_PLANE_NAMESPACE``) that co-owns what ServingStack ``stack`` composes."""
    return bounded_name(f"{stack}-stack-anchor", _MAX_SUBDOMAIN)


# The workload cluster's Gateway: its Namespace (the GatewayClass and Gateway take the keys below).
GATEWAY_NAMESPACE_KEY = "gateway-namespace"
# Its TLS (modelplane.routing.workload_tls): the cert-manager Issuers and Certificates, in signing order.
GATEWAY_ISSUER_KEY = "gateway-issuer"
GATEWAY_CA_KEY = "gateway-ca"
GATEWAY_CA_ISSUER_KEY = "gateway-ca-issuer"
GATEWAY_CERTIFICATE_KEY = "gateway-certificate"


def gateway_ca_secret(stack: str) -> str:
    """The control-plane Secret (in ``CONTROL_PLANE_NAMESPACE``) with a workload gateway's CA certificate."""
    return bounded_name(f"{stack}-gateway-ca", 253)


# --- Composition keys of a ModelReplica ---

# The ObservedObjectCollection of the replica's pods (each remote object's key is ``remote_key``).
PODS_KEY = "pods"


# --- The in-cluster routing of a ModelDeployment (``spec.routing``) ---

# Every cluster that runs replicas of a deployment in routing mode Pool gets one InferencePool and
# endpoint picker for them; its ModelEndpoint is the deployment's route into that cluster. Like a
# replica, the pool is a virtual host on the cluster's gateway, under this suffix.
POOL_HOST_SUFFIX = "pools.modelplane.ai"
# The endpoint picker's pods and Service carry the pool's name.
ENDPOINT_PICKER_LABEL = "modelplane.ai/endpoint-picker"
# Room for the endpoint picker's suffix ("-epp") and the pod names its Deployment derives.
_MAX_POOL = 48
_POOL_KEY = "pool-"


def pool_name(deployment: str) -> str:
    """The InferencePool (and endpoint picker, ``<pool>-epp``) of ``deployment`` on each of its clusters.

    A DNS-1035 label (the endpoint picker's Service name must be one): the deployment's name when it
    is one and fits, else cut, hashed and starting with a letter.
    """
    name = deployment if re.match(r"^[a-z]", deployment) else f"p{deployment}"
    return bounded_name(name, _MAX_POOL)


def endpoint_picker_name(deployment: str) -> str:
    """The endpoint picker's Deployment, Service, ServiceAccount, Role, RoleBinding and ConfigMap."""
    return f"{pool_name(deployment)}-epp"


def pool_host(deployment: str, namespace: str) -> str:
    """The virtual host of a deployment's pool on each cluster's gateway (``<deployment>.<namespace>.pools...``)."""
    return f"{bounded_name(deployment, _MAX_LABEL)}.{bounded_name(namespace, _MAX_LABEL)}.{POOL_HOST_SUFFIX}"


def routing_pool_key(cluster: str, part: str) -> str:
    """The composition resource name of part ``part`` of a deployment's pool on ``cluster``."""
    return f"{_POOL_KEY}{cluster_label(cluster)}-{part}"


def is_routing_pool_key(key: str) -> bool:
    """Whether ``key`` names a part of a deployment's pool on some cluster (``routing_pool_key``)."""
    return key.startswith(_POOL_KEY)


def pool_endpoint_name(deployment: str, cluster: str) -> str:
    """The ModelEndpoint of a deployment's pool on ``cluster``: ``<deployment>-<cluster>``, cut and hashed to 63."""
    return bounded_name(f"{deployment}-{cluster}", MAX_NAME)


# --- A ModelCache's copies (compose-model-cache) ---

# The seam until ModelDeployment's spec.modelCacheRef lands: a ModelReplica labelled with a cache's
# name uses that cache (its cluster keeps a copy under placement Follow, and a copy there is never
# deleted while it runs). Every object a cache composes on a workload cluster carries it too.
MODEL_CACHE_LABEL = "modelplane.ai/model-cache"
# Set by the user on a ModelCache: a new value starts a new hydration Job on every cluster (a Job that
# failed, e.g. for a missing Secret, never runs again by itself; the claim and its copy stay).
HYDRATION_RETRY_ANNOTATION = "modelplane.ai/hydration-retry"
# Composition keys are ``<cluster_label(cluster)>.<part>``: a cluster label has no dot.
_CACHE_KEY_SEPARATOR = "."
_MAX_JOB = 63
_DIGEST = 8


def cache_label(cache: str) -> str:
    """The ``MODEL_CACHE_LABEL`` value of ModelCache ``cache``: its name, cut and hashed when not a label value."""
    return bounded_name(cache, _MAX_LABEL)


def cache_key(cluster: str, part: str) -> str:
    """The composition resource name of part ``part`` of a cache's copy on ``cluster``."""
    return f"{cluster_label(cluster)}{_CACHE_KEY_SEPARATOR}{part}"


def cache_key_cluster(key: str) -> str | None:
    """The ``cluster_label`` of the cluster a cache's composition key ``key`` is for (None for another key)."""
    label, sep, part = key.partition(_CACHE_KEY_SEPARATOR)
    return label if sep and label and part else None


def cache_claim_name(cache: str) -> str:
    """The PersistentVolumeClaim of a cache (in its namespace on each workload cluster): ``model-cache-<cache>``."""
    return bounded_name(f"model-cache-{cache}", _MAX_SUBDOMAIN)


def cache_job_name(cache: str, digest: str) -> str:
    """The hydration Job of a cache for one source (``digest``): a label value, as the Job's pods carry it."""
    return f"{bounded_name(f'hydrate-{cache}', _MAX_JOB - _DIGEST - 1)}-{digest[:_DIGEST]}"


def cache_node_name(namespace: str, cache: str) -> str:
    """A cache's cluster-scoped KServe LocalModelNodeGroup and LocalModelCache: ``<namespace>-<cache>``."""
    return bounded_name(f"{namespace}-{cache}", _MAX_SUBDOMAIN)


# --- A ModelBatchRun's objects on its workload cluster (compose-model-batch-run) ---
# Every object a batch run puts on its cluster, its Job (or each Job of its CronJob) and every pod carry
# the run's name (``batch_label``): the run observes its pods, and a scheduled run its Jobs, by it.
BATCH_RUN_LABEL = "modelplane.ai/batch-run"
# The Observe-only Objects provider-kubernetes creates for those pods and Jobs carry these labels
# (value: ``batch_label``); the run asks for them as required resources. Apart from a replica's
# ``OBSERVED_PODS_LABEL``: a run and a replica of one name must not read each other's pods.
BATCH_PODS_LABEL = "modelplane.ai/batch-pods-of"
BATCH_JOBS_LABEL = "modelplane.ai/batch-jobs-of"
# On a run's composed worker Object: where the worker was placed (a Dedicated run stays where it was
# placed; annotations, as a cluster's name may not be a label value).
BATCH_CLUSTER_ANNOTATION = "modelplane.ai/batch-cluster"
BATCH_POOL_ANNOTATION = "modelplane.ai/batch-pool"
# On the worker's pod template: the container whose termination message is the run's result contract.
BATCH_REPORTER_ANNOTATION = "modelplane.ai/batch-reporter"
# The composition keys of a run: its namespace, scripts, DRA claim template, Job or CronJob, and the
# collections that observe its pods and (scheduled runs) its Jobs.
BATCH_NAMESPACE_KEY = "namespace"
BATCH_SCRIPTS_KEY = "scripts"
BATCH_CLAIM_KEY = "claim"
BATCH_WORKER_KEY = "worker"
BATCH_PODS_KEY = "pods"
BATCH_JOBS_KEY = "jobs"
# A CronJob's name leaves room for the 11 characters its controller appends to each Job's.
_MAX_CRON_JOB = 52


def batch_label(run: str) -> str:
    """The ``BATCH_RUN_LABEL`` value of ModelBatchRun ``run``: its name, cut and hashed when not a label value."""
    return bounded_name(run, _MAX_LABEL)


def batch_job_name(run: str, *, scheduled: bool) -> str:
    """The run's Job (a label value, as its pods carry it) or CronJob on the workload cluster."""
    return bounded_name(run, _MAX_CRON_JOB if scheduled else _MAX_JOB)


def batch_scripts_name(run: str) -> str:
    """The ConfigMap holding the program the run's pod runs: ``modelplane-batch-<run>``."""
    return bounded_name(f"modelplane-batch-{run}", _MAX_SUBDOMAIN)


# On a run's worker Object: a digest of the Job it carries. A one-shot run's Job cannot change once
# created (its pod template is immutable, and a new Job would run the batch again): when the digest
# of what the spec now asks differs from the one created, the Job is kept as it is and the run says so.
BATCH_DIGEST_ANNOTATION = "modelplane.ai/batch-digest"
