"""The endpoint picker's configuration: an EndpointPickerConfig for a deployment's routing profile.

The llm-d router (the Gateway API Inference Extension's endpoint picker, EPP) reads
its plugins and scheduling profiles from a file, not a CRD: ``apiVersion:
llm-d.ai/v1alpha1, kind: EndpointPickerConfig``. A profile names one of the
configurations below; ``Custom`` takes the user's, checked here because no API
server can: a config that is not an EndpointPickerConfig, or names a plugin type
the pinned router does not have, is an ``InvalidPickerConfigError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CONFIG_API_VERSION = "llm-d.ai/v1alpha1"
CONFIG_KIND = "EndpointPickerConfig"
FIELD = "spec.routing.endpointPicker"

# The plugin types llm-d router v0.10.0 registers (its plugin registry), which a Custom config may name.
KNOWN_PLUGIN_TYPES = frozenset(
    {
        "active-request-scorer",
        "always-disagg-pd-decider",
        "by-label",
        "by-label-selector",
        "core-metrics-extractor",
        "decode-filter",
        "disagg-headers-handler",
        "disagg-profile-handler",
        "kv-cache-utilization-scorer",
        "load-aware-scorer",
        "lora-affinity-scorer",
        "max-score-picker",
        "metrics-data-source",
        "no-hit-lru-scorer",
        "pd-profile-handler",
        "precise-prefix-cache-scorer",
        "prefill-filter",
        "prefix-based-pd-decider",
        "prefix-cache-scorer",
        "queue-scorer",
        "random-picker",
        "running-requests-size-scorer",
        "session-affinity-scorer",
        "single-profile-handler",
        "weighted-random-picker",
    }
)


class Profile(StrEnum):
    """``spec.routing.endpointPicker.profile``."""

    DEFAULT = "Default"
    PREFIX_CACHE = "PrefixCache"
    CUSTOM = "Custom"


class Engine(StrEnum):
    """The inference engine of a deployment's pods, as its first container shows it."""

    VLLM = "vLLM"
    SGLANG = "SGLang"


class InvalidPickerConfigError(ValueError):
    """A Custom endpoint picker config that cannot be used; ``field`` names where."""

    def __init__(self, field: str, message: str) -> None:
        """Record the field and the problem."""
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class Picker:
    """What the endpoint picker of each of a deployment's pools runs.

    Attributes:
        profile: The routing profile.
        config: The user's EndpointPickerConfig (profile Custom only).
        failure_mode: ``FailOpen`` or ``FailClose``.
        replicas: Picker pods per cluster.
    """

    profile: Profile = Profile.DEFAULT
    config: Mapping[str, Any] | None = None
    failure_mode: str = "FailOpen"
    replicas: int = 1


# (pluginRef, weight) of each profile's scorers. Default is llm-d's default profile.
_SCORERS: dict[Profile, tuple[tuple[str, int], ...]] = {
    Profile.DEFAULT: (("queue-scorer", 2), ("kv-cache-utilization-scorer", 2), ("prefix-cache-scorer", 3)),
    Profile.PREFIX_CACHE: (("queue-scorer", 1), ("kv-cache-utilization-scorer", 1), ("prefix-cache-scorer", 5)),
}
# Where the picker reads engine metrics: the pods' own serving port, /metrics.
_DATA_SOURCE = {"type": "metrics-data-source", "parameters": {"scheme": "http", "path": "/metrics"}}
_EXTRACTOR = {"type": "core-metrics-extractor"}


def picker_config(picker: Picker, *, disaggregated: bool) -> dict[str, Any]:
    """The EndpointPickerConfig the picker runs: the profile's, the P/D one, or the user's (checked).

    A disaggregated deployment runs the prefill/decode profile (``pd-profile-handler``) with
    the profile's scorers in each of its two scheduling profiles.

    Raises:
        InvalidPickerConfigError: a Custom config that is missing, not an EndpointPickerConfig, or
            names an unknown plugin type.
    """
    if picker.profile is Profile.CUSTOM:
        return check_config(picker.config)
    scorers = _SCORERS[picker.profile]
    plugins: list[dict[str, Any]] = [{"type": name} for name, _ in scorers]
    plugins += [dict(_DATA_SOURCE), dict(_EXTRACTOR), {"type": "max-score-picker"}]
    scored = [{"pluginRef": name, "weight": weight} for name, weight in scorers]
    if not disaggregated:
        profiles = [{"name": "default", "plugins": [*scored, {"pluginRef": "max-score-picker"}]}]
    else:
        plugins += [{"type": "prefill-filter"}, {"type": "decode-filter"}, {"type": "pd-profile-handler"}]
        profiles = [
            {"name": role, "plugins": [{"pluginRef": f"{role}-filter"}, *scored, {"pluginRef": "max-score-picker"}]}
            for role in ("prefill", "decode")
        ]
    return {"apiVersion": CONFIG_API_VERSION, "kind": CONFIG_KIND, "plugins": plugins, "schedulingProfiles": profiles}


def check_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The user's EndpointPickerConfig, as written, once it reads as one.

    Raises:
        InvalidPickerConfigError: it is missing, not an EndpointPickerConfig, its plugins or
            profiles are malformed, or it names a plugin type llm-d router v0.10.0 does not have.
    """
    where = f"{FIELD}.config"
    if not isinstance(config, Mapping) or not config:
        raise InvalidPickerConfigError(where, "required with profile Custom")
    api_version, kind = config.get("apiVersion"), config.get("kind")
    if api_version != CONFIG_API_VERSION or kind != CONFIG_KIND:
        message = (
            f"is {api_version or '(no apiVersion)'} {kind or '(no kind)'}, not an {CONFIG_KIND} "
            f"(apiVersion {CONFIG_API_VERSION}, kind {CONFIG_KIND})"
        )
        raise InvalidPickerConfigError(where, message)
    plugins = config.get("plugins")
    if not isinstance(plugins, list) or not plugins:
        raise InvalidPickerConfigError(f"{where}.plugins", "must list at least one plugin")
    names: set[str] = set()
    for i, plugin in enumerate(plugins):
        at = f"{where}.plugins[{i}]"
        if not isinstance(plugin, Mapping) or not isinstance(plugin.get("type"), str) or not plugin["type"]:
            raise InvalidPickerConfigError(f"{at}.type", "required: the plugin's type")
        if plugin["type"] not in KNOWN_PLUGIN_TYPES:
            known = ", ".join(sorted(KNOWN_PLUGIN_TYPES))
            raise InvalidPickerConfigError(
                f"{at}.type", f"unknown plugin type {plugin['type']!r} (llm-d router v0.10.0 has: {known})"
            )
        names.add(str(plugin.get("name") or plugin["type"]))
    profiles = config.get("schedulingProfiles")
    if profiles is not None and not isinstance(profiles, list):
        raise InvalidPickerConfigError(f"{where}.schedulingProfiles", "must be a list")
    for i, profile in enumerate(profiles or []):
        refs = profile.get("plugins") if isinstance(profile, Mapping) else None
        if not isinstance(profile, Mapping) or not profile.get("name") or not isinstance(refs, list):
            raise InvalidPickerConfigError(f"{where}.schedulingProfiles[{i}]", "needs a name and a plugins list")
        for j, ref in enumerate(refs):
            name = ref.get("pluginRef") if isinstance(ref, Mapping) else None
            if name not in names:
                message = f"{name!r} is not the name (or type) of a plugin in {where}.plugins"
                raise InvalidPickerConfigError(f"{where}.schedulingProfiles[{i}].plugins[{j}].pluginRef", message)
    return dict(config)


def engine_of(template: Mapping[str, Any]) -> Engine:
    """The engine the pods run: SGLang when the first container's image or command says so, else vLLM."""
    containers = (template.get("spec") or {}).get("containers") or []
    first = containers[0] if containers else {}
    words = [str(first.get("image") or ""), *(str(c) for c in first.get("command") or [])]
    return Engine.SGLANG if any("sglang" in w.lower() for w in words) else Engine.VLLM


# The picker's flags naming each engine's metrics (vLLM's are the picker's defaults).
ENGINE_METRIC_FLAGS: dict[Engine, tuple[str, ...]] = {
    Engine.VLLM: (
        "--total-queued-requests-metric=vllm:num_requests_waiting",
        "--total-running-requests-metric=vllm:num_requests_running",
        "--kv-cache-usage-percentage-metric=vllm:kv_cache_usage_perc",
    ),
    Engine.SGLANG: (
        "--total-queued-requests-metric=sglang:num_queue_reqs",
        "--total-running-requests-metric=sglang:num_running_reqs",
        "--kv-cache-usage-percentage-metric=sglang:token_usage",
    ),
}


class Mode(StrEnum):
    """``spec.routing.mode``."""

    POOL = "Pool"
    REPLICA = "Replica"


@dataclass(frozen=True)
class Routing:
    """A deployment's ``spec.routing``, defaults applied.

    Attributes:
        mode: Pool (one InferencePool and endpoint picker per cluster) or Replica.
        picker: The endpoint picker's settings.
        priority: The InferenceObjective priority, if any.
    """

    mode: Mode = Mode.POOL
    picker: Picker = Picker()
    priority: int | None = None


def routing_of(spec: Mapping[str, Any] | None) -> Routing:
    """``spec.routing`` as written (plain values), with the XRD's defaults; absent means mode Pool, profile Default."""
    spec = spec or {}
    picker = spec.get("endpointPicker") or {}
    profile = picker.get("profile")
    priority = spec.get("priority")
    return Routing(
        mode=Mode.REPLICA if spec.get("mode") == Mode.REPLICA else Mode.POOL,
        picker=Picker(
            profile=Profile(profile) if profile in {str(p) for p in Profile} else Profile.DEFAULT,
            config=picker.get("config") if isinstance(picker.get("config"), Mapping) else None,
            failure_mode="FailClose" if picker.get("failureMode") == "FailClose" else "FailOpen",
            replicas=int(picker.get("replicas") or 1),
        ),
        priority=int(priority) if isinstance(priority, int | float) and not isinstance(priority, bool) else None,
    )
