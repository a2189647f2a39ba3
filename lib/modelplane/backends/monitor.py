"""The PodMonitor every replica composes for its engines, on clusters that run the prometheus-operator."""

from __future__ import annotations

from collections.abc import Sequence

from modelplane.backends.model import Remote, ReplicaWork, RolePods
from modelplane.monitoring import ScrapeTarget, pod_monitor, prometheus_of
from modelplane.names import DEPLOYMENT_LABEL, REPLICA_LABEL, remote_key
from modelplane.routing.picker import Engine, engine_of

# SGLang serves (and, with --enable-metrics, exposes /metrics) on 30000 unless told otherwise.
SGLANG_PORT = 30000


def replica_monitor(work: ReplicaWork, roles: Sequence[RolePods]) -> Remote | None:
    """The replica's PodMonitor over its engine pods (leaders only, for multi-node workers); None without monitors."""
    if not prometheus_of(work.prometheus).monitors or not roles:
        return None
    serving = next(p for p in roles if p.work.role is work.serving_role.role)
    declared = bool(((serving.work.template.get("spec") or {}).get("containers") or [{}])[0].get("ports"))
    engine = engine_of(serving.work.template)
    port = serving.port if declared or engine is Engine.VLLM else SGLANG_PORT
    target = ScrapeTarget(
        name=work.name,
        namespace=work.namespace,
        selector={REPLICA_LABEL: work.name},
        port=port,
        leader_only_size=max(p.work.footprint.nodes_per_worker for p in roles),
        deployment=str(work.labels.get(DEPLOYMENT_LABEL, "")),
        replica=work.name,
        cluster=work.cluster,
    )
    return Remote(remote_key("podmonitor"), pod_monitor(target, work.labels))
