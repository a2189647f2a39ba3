"""What an object's Ready condition says: one reading, wherever an object is read.

Every reader of a condition (of an observed composed resource, a required
resource, a generated model or a protobuf Struct read in place) turns the
object's entries into ``Entry`` values and asks ``readiness``:

1. Of ``status.conditions``, the entries of the type asked (``Ready`` unless
   another is named) count.
2. None: Unknown, "no Ready condition yet". Entries that disagree (a list
   written twice by a person or a bug): Unknown. Otherwise their status.
3. ``current`` says whether the answer speaks for the object's spec as it is
   now: False once an entry's ``observedGeneration`` is behind
   ``metadata.generation`` (the spec was just changed and its controller has
   not looked yet). A missing figure of either is not read as behind: not every
   controller writes one.

Whether a stale answer counts is each reader's call, made where it reads: a
decision about the spec an object runs now (which replica to retire) needs
``current``; whether something is up (a cluster, a composed resource gating
its XR) takes the status, as a stale True still says it was up when last seen.

4. Of a Modelplane XR, ``status.readyVerdict`` (its composition function's verdict
   at its last run) decides ``Ready`` where present. Crossplane core (v2.4) applies
   an XR's status with the conditions as it read them when its reconcile began: one
   that began before the previous reconcile's write reached its cache writes the
   previous Ready back for a moment (seen as True, False, True within ~100 ms to
   ~2 s), while the function's own status fields in that same write are fresh. The
   condition's reason, message and time are kept when they agree with the verdict;
   otherwise they are the stale ones and are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

READY = "Ready"
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
# The field of a Modelplane XR's status where its function publishes its readiness (rule 4).
VERDICT_FIELD = "readyVerdict"
# The API group of the XRs that publish it: other kinds' fields of that name mean something else.
VERDICT_GROUP = "modelplane.ai/"


class Entry(NamedTuple):
    """One ``status.conditions[]`` entry, as read (fields a reader could not read are empty)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    since: str = ""  # lastTransitionTime
    observed_generation: int | None = None


class Readiness(NamedTuple):
    """What an object's condition of one type says.

    Attributes:
        status: ``True``, ``False`` or ``Unknown``.
        found: Whether the object has a condition of the type at all.
        current: Whether it was observed for the object's current generation.
        reason: The first entry's reason.
        message: The first entry's message.
        since: The first entry's ``lastTransitionTime``.
    """

    status: str = UNKNOWN
    found: bool = False
    current: bool = True
    reason: str = ""
    message: str = ""
    since: str = ""

    @property
    def true(self) -> bool:
        """Whether the condition says True (for the current generation or not: see the module)."""
        return self.status == TRUE

    @property
    def settled(self) -> bool | None:
        """True or False as the condition says for the current generation; None when it does not say."""
        if not self.current or self.status not in (TRUE, FALSE):
            return None
        return self.status == TRUE

    def why_not(self, typ: str = READY) -> str:
        """Why it is not True, for a message: "" when it is."""
        if self.true:
            return ""
        if not self.found:
            return f"no {typ} condition yet"
        detail = ": ".join(x for x in (self.reason, self.message) if x)
        return f"{typ} is {self.status}" + (f" ({detail})" if detail else "")


def readiness(
    entries: Iterable[Entry], generation: int | None = None, typ: str = READY, *, verdict: bool | None = None
) -> Readiness:
    """Read condition ``typ`` of an object from its ``entries`` and ``metadata.generation`` (see the module).

    ``verdict`` is the XR's ``status.readyVerdict`` (rule 4): it decides ``Ready`` where given.
    """
    matching = [e for e in entries if e.type == typ]
    if verdict is not None and typ == READY:
        return _with_verdict(readiness(matching, generation, typ), verdict=verdict)
    if not matching:
        return Readiness()
    first = matching[0]
    said = {e.status for e in matching}
    status = first.status if len(said) == 1 and first.status in (TRUE, FALSE) else UNKNOWN
    behind = generation is not None and any(
        e.observed_generation is not None and e.observed_generation < generation for e in matching
    )
    return Readiness(
        status, found=True, current=not behind, reason=first.reason, message=first.message, since=first.since
    )


def _with_verdict(said: Readiness, *, verdict: bool) -> Readiness:
    """The condition's reading, its status set by the function's verdict (its details kept when they agree)."""
    status = TRUE if verdict else FALSE
    if said.status == status:
        return said
    return Readiness(status, found=True, current=said.current)


def verdict_of(api_version: object, status: object) -> bool | None:
    """A Modelplane XR's ``status.readyVerdict`` (rule 4); None for other kinds or where it is absent."""
    if not isinstance(api_version, str) or not api_version.startswith(VERDICT_GROUP) or not isinstance(status, Mapping):
        return None
    found = status.get(VERDICT_FIELD)
    return found if isinstance(found, bool) else None


def entry_of(condition: Mapping[str, object] | object) -> Entry:
    """An ``Entry`` of a condition given as a dict (a conformed input) or a model (attributes of the same names)."""
    get = condition.get if isinstance(condition, Mapping) else lambda name: getattr(condition, name, None)
    return Entry(
        _text(get("type")),
        _text(get("status")),
        _text(get("reason")),
        _text(get("message")),
        _text(get("lastTransitionTime")),
        _integer(get("observedGeneration")),
    )


def readiness_of(obj: Mapping[str, object] | None, typ: str = READY) -> Readiness:
    """Condition ``typ`` of an object given as a dict (a conformed input, a manifest); Unknown for None."""
    if obj is None:
        return Readiness()
    status, metadata = obj.get("status"), obj.get("metadata")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    generation = metadata.get("generation") if isinstance(metadata, Mapping) else None
    conditions = [entry_of(c) for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []
    return readiness(conditions, _integer(generation), typ, verdict=verdict_of(obj.get("apiVersion"), status))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _integer(value: object) -> int | None:
    """An integer as JSON carries it (protobuf: as a double); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if float(value).is_integer() else None
