"""A ModelDeployment's rollout and failover settings, resolved to counts and seconds.

``maxSurge`` and ``maxUnavailable`` are Kubernetes IntOrString values: a count,
or a percentage of ``spec.replicas`` that rounds up for the surge and down for
the unavailable, as a Deployment's do. Defaults (maxSurge 1, maxUnavailable 0)
suit GPU workloads: Ready replicas never drop, and a rollout needs at most one
replica's GPUs more. Both resolving to 0 would never progress: the surge becomes 1.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from modelplane_models.model_deployment import Spec

DEFAULT_SURGE = 1
DEFAULT_UNAVAILABLE = 0
DEFAULT_DEADLINE = 600
DEFAULT_FAILOVER = 300.0
_DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


@dataclass(frozen=True)
class Strategy:
    """How replicas move to a new revision, and when a lost cluster's replicas are replaced.

    Attributes:
        max_surge: Replicas placed beyond ``spec.replicas`` during a rollout or a drain.
        max_unavailable: Ready replicas a rollout may take away below ``spec.replicas``.
        paused: ``spec.paused``: replicas of an older revision are neither updated nor retired.
        deadline: ``spec.progressDeadlineSeconds``.
        failover_after: Seconds a cluster stays lost before its replicas are replaced; None disables.
    """

    max_surge: int = DEFAULT_SURGE
    max_unavailable: int = DEFAULT_UNAVAILABLE
    paused: bool = False
    deadline: int = DEFAULT_DEADLINE
    failover_after: float | None = DEFAULT_FAILOVER


def scaled(value: int | str | None, replicas: int, *, round_up: bool, default: int) -> int:
    """An IntOrString count: a whole number, or a percentage of ``replicas``; ``default`` when unset or unreadable."""
    if value is None:
        return default
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return max(0, value)
    text = value.strip()
    if text.endswith("%") and text[:-1].isdigit():
        share = replicas * int(text[:-1]) / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(text) if text.isdigit() else default


def duration_seconds(text: str | None) -> float | None:
    """A Go-style duration of hours, minutes and seconds (``1h30m``) in seconds; None for "0", empty or invalid."""
    if text is None:
        return DEFAULT_FAILOVER
    match = _DURATION.fullmatch(text.strip())
    if text.strip() in ("", "0") or match is None or not any(match.groups()):
        return None
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return float(hours * 3600 + minutes * 60 + seconds)


def strategy_of(spec: Spec) -> Strategy:
    """The strategy of a ModelDeployment's ``spec``, its counts resolved against ``spec.replicas``."""
    replicas = spec.replicas if spec.replicas is not None else 1
    rolling = spec.strategy.rollingUpdate if spec.strategy is not None else None
    surge = scaled(rolling.maxSurge if rolling else None, replicas, round_up=True, default=DEFAULT_SURGE)
    unavailable = scaled(rolling.maxUnavailable if rolling else None, replicas, round_up=False, default=0)
    if surge == 0 and unavailable == 0:
        surge = 1
    failover = spec.failover.after if spec.failover is not None else None
    return Strategy(
        max_surge=surge,
        max_unavailable=unavailable,
        paused=bool(spec.paused),
        deadline=spec.progressDeadlineSeconds or DEFAULT_DEADLINE,
        failover_after=duration_seconds(failover),
    )
