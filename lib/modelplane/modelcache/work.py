"""A ModelCache resolved for composing: its source, size and storage, as plain values."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from math import ceil

from modelplane.cel.k8s import QuantityError, exact, parse_quantity
from modelplane_models.model_cache import Spec


class SourceKind(StrEnum):
    """Where the weights come from (the member of ``spec.source`` that is set)."""

    HUGGING_FACE = "huggingFace"
    S3 = "s3"
    HTTP = "http"
    OCI = "oci"


class StorageType(StrEnum):
    """Where a cluster's copy is kept (``spec.storage.type``)."""

    PVC = "PVC"
    NODE_LOCAL = "NodeLocal"


@dataclass(frozen=True)
class Source:
    """One source of weights.

    Attributes:
        kind: Which kind of source.
        location: The repository, S3 prefix, URL or image.
        revision: A Hugging Face revision ("" for the default branch).
        region: An S3 region ("" when unset).
        secret: The Secret with credentials on the workload cluster ("" for none).
        secret_key: The Secret's key holding a token (Hugging Face, HTTP).
    """

    kind: SourceKind
    location: str
    revision: str = ""
    region: str = ""
    secret: str = ""
    secret_key: str = "token"  # noqa: S105 - the name of a Secret's key, not a password


@dataclass(frozen=True)
class CacheWork:
    """What a cache's copy on any cluster is made of.

    Attributes:
        name: The ModelCache's name.
        namespace: Its namespace (also the namespace of its claim and Job on each workload cluster).
        source: Where the weights come from.
        size: ``spec.size`` as written (a Kubernetes quantity).
        size_bytes: ``size`` in bytes, rounded up.
        storage: Where each copy is kept.
        storage_class: The claim's StorageClass ("" for the cluster's default).
        access_mode: How serving pods mount the claim.
        retry: The cache's ``modelplane.ai/hydration-retry`` annotation ("" when unset): a new value
            starts a new hydration Job (e.g. once a missing Secret is created).
    """

    name: str
    namespace: str
    source: Source
    size: str
    size_bytes: int
    storage: StorageType = StorageType.PVC
    storage_class: str = ""
    access_mode: str = "ReadOnlyMany"
    retry: str = ""


def sources(spec: Spec) -> list[Source]:
    """Every source ``spec.source`` sets, in the order huggingFace, s3, http, oci (a valid spec sets one).

    One reading for the cache's copies and for the replicas that use them: a replica's KServe
    ``spec.model.uri`` is the LocalModelCache's ``sourceModelUri`` of the same source.
    """
    given = spec.source
    out = []
    if given.huggingFace is not None:
        hf = given.huggingFace
        token = hf.tokenSecretRef
        out.append(
            Source(
                SourceKind.HUGGING_FACE,
                hf.repo,
                revision=hf.revision or "",
                secret=token.name if token else "",
                secret_key=(token.key if token else None) or "token",
            )
        )
    if given.s3 is not None:
        secret = given.s3.secretRef.name if given.s3.secretRef else ""
        out.append(Source(SourceKind.S3, given.s3.uri, region=given.s3.region or "", secret=secret))
    if given.http is not None:
        out.append(
            Source(SourceKind.HTTP, given.http.url, secret=given.http.secretRef.name if given.http.secretRef else "")
        )
    if given.oci is not None:
        out.append(Source(SourceKind.OCI, given.oci.image))
    return out


class InvalidSizeError(ValueError):
    """``spec.size`` is not a positive quantity."""


def size_in_bytes(size: str) -> int:
    """``size`` (a Kubernetes quantity) in bytes, rounded up.

    Raises:
        InvalidSizeError: ``size`` is not a quantity, or not above zero.
    """
    try:
        value: Fraction = exact(parse_quantity(size))
    except QuantityError as err:
        msg = f"spec.size: {size!r} is not a Kubernetes quantity ({err})"
        raise InvalidSizeError(msg) from err
    if value <= 0:
        msg = f"spec.size: {size!r} must be more than 0"
        raise InvalidSizeError(msg)
    return ceil(value)
