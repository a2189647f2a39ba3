"""The functions' warnings over a fleet, each once, without those a table already shows."""

from __future__ import annotations

from modelplane.preview.fleet import Fleet
from modelplane.preview.view.model import Message
from modelplane.preview.view.read import display_name

# The condition whose message the tables print for each kind (a warning repeating it is left out).
_SHOWN_CONDITION = {"InferenceCluster": "Ready", "ModelDeployment": "Scheduled", "ModelService": "Routed"}


def messages(fleet: Fleet) -> tuple[Message, ...]:
    """Every warning once; one that repeats a condition message shown elsewhere, and Normal events, are left out."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for key, state in fleet.states.items():
        shown = [
            str(c.get("message", ""))
            for c in state.xr.get("status", {}).get("conditions", [])
            if c.get("message") and c.get("type") == _SHOWN_CONDITION.get(key[0])
        ]
        for result in state.results:
            severity = str(result.get("severity", "?")).removeprefix("SEVERITY_").capitalize()
            text = str(result.get("message", ""))
            if severity == "Normal" or any(m and m in text for m in shown):
                continue
            entry = (severity, f"{key[0]} {display_name(key)}", text)
            if entry not in seen:
                seen.add(entry)
                out.append(Message(*entry))
    return tuple(out)
