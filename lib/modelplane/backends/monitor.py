"""The PodMonitor every replica composes for its engines, on clusters that run the prometheus-operator."""

from __future__ import annotations

from collections.abc import Sequence

from modelplane.backends.model import Remote, ReplicaWork, RolePods
from modelplane.monitoring import ScrapeTarget, pod_monitor, prometheus_of
from modelplane.names import DEPLOYMENT_LABEL, REPLICA_LABEL, remote_key
from modelplane.routing.picker import Engine, engine_of
from modelplane.topology import Role

# SGLang serves (and, with --enable-metrics, exposes /metrics) on 30000 unless told otherwise.
SGLANG_PORT = 30000
SGLANG_METRICS_FLAG = "--enable-metrics"


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


def metrics_warning(work: ReplicaWork) -> str | None:
    """Why a monitored engine will expose no metrics: SGLang started without ``--enable-metrics``; else None.

    The PodMonitor is composed regardless (the pods may set it through a config file or the
    environment), but a scrape of an SGLang server started without the flag finds no ``/metrics``,
    so the queue-depth signal the picker and the autoscaler read stays empty: say so, naming the field.
    """
    if not prometheus_of(work.prometheus).monitors:
        return None
    missing = []
    for role in work.roles:
        if engine_of(role.template) is not Engine.SGLANG:
            continue
        containers = (role.template.get("spec") or {}).get("containers") or [{}]
        words = [str(w) for key in ("command", "args") for w in containers[0].get(key) or []]
        if not any(w == SGLANG_METRICS_FLAG or w.startswith(f"{SGLANG_METRICS_FLAG}=") for w in words):
            missing.append(_template_field(role.role))
    if not missing:
        return None
    return (
        f"{', '.join(missing)}: an SGLang engine serves no /metrics without {SGLANG_METRICS_FLAG}:"
        " its PodMonitor will scrape nothing (add the flag to the container's args)"
    )


def _template_field(role: Role) -> str:
    where = "spec" if role is Role.UNIFIED else f"spec.{role}"
    return f"{where}.workers.template.spec.containers[0].args"
