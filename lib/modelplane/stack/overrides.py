"""A Managed chart as a cluster installs it: the pinned chart with the component's overrides and the registry mirror.

Precedence, lowest first: the table's chart (``modelplane.charts``), then ``spec.registry``
(its chart mirror for the repository, its image mirror for the image values the table
knows), then the component's own ``version``, ``repository`` and ``values``. Values merge
key by key where both sides are objects; anything else the component sets replaces ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.charts import Chart

DOCKER_HUB = "docker.io"


@dataclass(frozen=True)
class Overrides:
    """A component's ``version``, ``repository`` and ``values`` (None or empty: the table's)."""

    version: str | None = None
    repository: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Registry:
    """``spec.registry``: a chart mirror, an image mirror (a host with an optional path), the chart mirror's Secret."""

    charts: str | None = None
    images: str | None = None
    pull_secret: str | None = None


NO_REGISTRY = Registry()


@dataclass(frozen=True)
class Install:
    """One Helm release of a Managed component, as composed.

    Attributes:
        chart: The table's row (component, chart name, namespace, dependencies).
        repository: Where the chart is pulled from.
        version: The chart version.
        values: The Helm values.
        pull_secret: The control-plane Secret with the repository's credentials (None: none).
    """

    chart: Chart
    repository: str
    version: str
    values: Mapping[str, Any]
    pull_secret: str | None = None


def merge_values(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged onto ``base``: objects key by key, recursively; any other value of ``over`` wins whole."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        out[key] = merge_values(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
    return out


def mirrored(image: str, mirror: str) -> str:
    """``image`` (a reference or a bare registry) as pulled from ``mirror``: the mirror, then the upstream path.

    ``quay.io/jetstack/cert-manager-controller`` from ``mirror.example.com/hub`` is
    ``mirror.example.com/hub/jetstack/cert-manager-controller``; ``kserve/storage-initializer``
    (Docker Hub, host implied) is ``mirror.example.com/hub/kserve/storage-initializer``; a bare
    registry (``docker.io``) is the mirror itself.
    """
    first, _, rest = image.partition("/")
    if rest and not ("." in first or ":" in first or first == "localhost"):
        first, rest = DOCKER_HUB, image  # a Docker Hub path names no host
    elif not rest and "." not in first and ":" not in first:
        rest = image  # a bare name is a Docker Hub path too
    mirror = mirror.rstrip("/")
    return f"{mirror}/{rest}" if rest else mirror


def _with(values: Mapping[str, Any], path: tuple[str, ...], value: str) -> dict[str, Any]:
    """``values`` with ``value`` at ``path`` (objects on the way created or merged)."""
    nested: Any = value
    for key in reversed(path):
        nested = {key: nested}
    return merge_values(values, nested)


def install(
    chart: Chart,
    overrides: Overrides,
    registry: Registry = NO_REGISTRY,
    *,
    base_values: Mapping[str, Any] | None = None,
    user_values: bool = True,
) -> Install:
    """``chart`` as a cluster installs it, with ``registry`` and ``overrides`` over the table's row.

    Args:
        chart: The table's row.
        overrides: The component's overrides.
        registry: The cluster's mirrors.
        base_values: Modelplane's values for the chart on this cluster, instead of the row's.
        user_values: Whether ``overrides.values`` apply to this chart (a component's main chart only).
    """
    values: dict[str, Any] = dict(chart.values if base_values is None else base_values)
    if registry.images:
        for image in chart.images:
            values = _with(values, image.path, mirrored(image.upstream, registry.images))
    if user_values and overrides.values:
        values = merge_values(values, overrides.values)
    if overrides.repository:
        repository, secret = overrides.repository, None
    elif registry.charts:
        repository, secret = registry.charts, registry.pull_secret
    else:
        repository, secret = chart.repository, None
    return Install(chart, repository, overrides.version or chart.version, values, secret)
