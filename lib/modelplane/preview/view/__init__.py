"""What a preview found, as plain data: the tables people read and the documents machines read.

``build`` reads a settled fleet once; the text tables (``modelplane.preview.tables``),
``--output json|yaml`` and the plan (``modelplane.preview.plan``) all read this.
The views are plain dataclasses (``model``); each side of the fleet has its
reader: infrastructure (``clusters``), workloads (``deployments``), traffic
(``services``, and in-cluster ``routing``), team ``quotas`` and the functions' ``messages``.
"""

from __future__ import annotations

from modelplane.preview.fleet import Fleet
from modelplane.preview.view.batches import batch_views
from modelplane.preview.view.caches import cache_views
from modelplane.preview.view.clusters import class_views, cluster_views, control_plane_releases
from modelplane.preview.view.deployments import deployment_views, replica_view
from modelplane.preview.view.messages import messages
from modelplane.preview.view.model import (
    BackendView,
    BatchRunView,
    CacheCopyView,
    ClassView,
    ClusterView,
    Condition,
    DeploymentView,
    FleetView,
    Message,
    PoolRouteView,
    PoolView,
    QuotaView,
    ReleaseView,
    ReplicaView,
    RoleView,
    ServiceView,
    StackView,
)
from modelplane.preview.view.quotas import quota_views
from modelplane.preview.view.read import condition, display_name
from modelplane.preview.view.routing import pool_views
from modelplane.preview.view.services import gateway_addresses, service_views

__all__ = [
    "BackendView",
    "BatchRunView",
    "CacheCopyView",
    "ClassView",
    "ClusterView",
    "Condition",
    "DeploymentView",
    "FleetView",
    "Message",
    "PoolRouteView",
    "PoolView",
    "QuotaView",
    "ReleaseView",
    "ReplicaView",
    "RoleView",
    "ServiceView",
    "StackView",
    "build",
    "condition",
    "replica_view",
]


def build(fleet: Fleet, source: str) -> FleetView:
    """Read a settled fleet into the views the preview prints."""
    return FleetView(
        source=source,
        objects=len(fleet.states),
        passes=fleet.passes,
        classes=class_views(fleet),
        clusters=cluster_views(fleet),
        deployments=deployment_views(fleet),
        services=service_views(fleet),
        gateways=gateway_addresses(fleet),
        control_plane_releases=control_plane_releases(fleet),
        messages=messages(fleet),
        errors={f"{k[0]} {display_name(k)}": msg for k, msg in fleet.errors.items()},
        pools=pool_views(fleet),
        caches=cache_views(fleet),
        batches=batch_views(fleet),
        quotas=quota_views(fleet),
    )
