"""One table from a cluster's scheduler to its capacity adapter.

Adding a scheduler (Volcano is the next one) is one adapter module and one row here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from modelplane.capacity.kai import kai_snapshot
from modelplane.capacity.kueue import kueue_snapshot
from modelplane.capacity.observed import Source
from modelplane.capacity.snapshot import Snapshot

Adapter = Callable[[Sequence[Mapping[str, Any]], Iterable[str]], Snapshot]

ADAPTERS: dict[str, tuple[Source, Adapter]] = {
    "KAI": (Source.KAI, kai_snapshot),
    "Kueue": (Source.KUEUE, kueue_snapshot),
}


def scheduler_snapshot(
    scheduler: str, objects: Sequence[Mapping[str, Any]], device_classes: Iterable[str] = ()
) -> Snapshot | None:
    """The snapshot of ``scheduler`` read from its observed status objects; None for a scheduler without one.

    Args:
        scheduler: ``spec.scheduler.type`` (``None``, ``KAI``, ``Kueue``).
        objects: The scheduler's status objects as observed on the cluster.
        device_classes: DRA device classes that count as GPUs.
    """
    row = ADAPTERS.get(scheduler)
    return row[1](objects, device_classes) if row is not None else None
