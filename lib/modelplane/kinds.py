"""The table of Modelplane kinds: one row per XRD, its function and its package.

Everything that needs to go from a kind to its plural, its composition
function or its Python module reads this table, so adding a kind is one row.
"""

from __future__ import annotations

from dataclasses import dataclass

GROUP = "modelplane.ai"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

# Function packages are published under this repository prefix. Crossplane
# names a dependency after its package path without the registry host and
# with '/' replaced by '-', so the Function object of
# xpkg.crossplane.io/modelplane/function-compose-inference-class is named
# modelplane-function-compose-inference-class: that is the functionRef.
PACKAGE_REGISTRY = "xpkg.crossplane.io"
PACKAGE_ORG = "modelplane"
PACKAGE_VERSION = "v0.1.0"


@dataclass(frozen=True)
class Kind:
    """One Modelplane kind and where its pieces live."""

    kind: str
    plural: str
    scope: str  # "Cluster" or "Namespaced"
    slug: str  # kebab-case kind, e.g. "model-deployment"
    # Whether its function reads the XR's own status (``modelplane.fnkit.xr.parse_composite`` drops it):
    # one that does not composes the same whatever status it last wrote.
    reads_own_status: bool = False

    @property
    def function(self) -> str:
        """The function's directory name, e.g. compose-model-deployment."""
        return f"compose-{self.slug}"

    @property
    def module(self) -> str:
        """The function's Python package, e.g. compose_model_deployment."""
        return self.function.replace("-", "_")

    @property
    def package(self) -> str:
        """The function's xpkg reference without a tag."""
        return f"{PACKAGE_REGISTRY}/{PACKAGE_ORG}/function-{self.function}"

    @property
    def function_ref(self) -> str:
        """The name Crossplane gives the installed Function (the Composition's functionRef)."""
        return f"{PACKAGE_ORG}-function-{self.function}"

    @property
    def composition(self) -> str:
        """The Composition's name."""
        return f"{self.plural}.{GROUP}"

    @property
    def namespaced(self) -> bool:
        """Whether objects of this kind live in a namespace."""
        return self.scope == "Namespaced"


KINDS: tuple[Kind, ...] = (
    Kind("InferenceClass", "inferenceclasses", "Cluster", "inference-class"),
    Kind("InferenceCluster", "inferenceclusters", "Cluster", "inference-cluster"),
    Kind("ServingStack", "servingstacks", "Cluster", "serving-stack"),
    Kind("InferenceGateway", "inferencegateways", "Cluster", "inference-gateway"),
    Kind("FleetPriorityClass", "fleetpriorityclasses", "Cluster", "fleet-priority-class"),
    Kind("FleetQuota", "fleetquotas", "Cluster", "fleet-quota"),
    Kind("ModelDeployment", "modeldeployments", "Namespaced", "model-deployment", reads_own_status=True),
    Kind("ModelReplica", "modelreplicas", "Namespaced", "model-replica"),
    Kind("ModelPool", "modelpools", "Namespaced", "model-pool"),
    Kind("ModelCache", "modelcaches", "Namespaced", "model-cache"),
    # Reads its own status: a finished run keeps the counts its Job reported once that Job is gone.
    Kind("ModelBatchRun", "modelbatchruns", "Namespaced", "model-batch-run", reads_own_status=True),
    Kind("ModelEndpoint", "modelendpoints", "Namespaced", "model-endpoint"),
    Kind("ModelService", "modelservices", "Namespaced", "model-service"),
)

BY_KIND: dict[str, Kind] = {k.kind: k for k in KINDS}
BY_FUNCTION_REF: dict[str, Kind] = {k.function_ref: k for k in KINDS}
