"""Admission: check manifests as the API server would once Crossplane has installed our XRDs.

Our kinds are checked against the CRD Crossplane generates from their XRD,
other kinds against their CRD in the shared CRDs or, when built in, the
Kubernetes OpenAPI document: structural defaults, unknown fields refused (the
strict field validation ``kubectl apply`` asks for), types, enums, required
fields, every CEL rule, and ObjectMeta. ``modelplane preview`` admits every
manifest with it before rendering, and the validation tests use the same code.
"""

from modelplane.admission.catalog import validate
from modelplane.admission.validator import Result, Validator

__all__ = ["Result", "Validator", "validate"]
