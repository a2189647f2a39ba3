"""Conform an object of unknown layout to the layout its reader expects, naming every field that does not fit.

Observed and required resources reach a function unchecked: a controller, a
provider or a person may have written anything there. A reader declares the
fields it reads as a layout, and ``conform`` returns the object with every such
field that does not fit removed (so the reader sees it as absent) and one
``Problem`` per removal. Fields a layout does not declare pass through unchanged.

A layout is one of:

- a type, ``str``, ``int``, ``float`` or ``bool``: a JSON value of that type
  (``int`` also takes an integral number, as protobuf carries every number as
  a double; ``float`` any number);
- ``object``: any value;
- a tuple of layouts: the first that fits;
- a dict of field names to layouts: an object whose declared fields fit, or,
  keyed by ``str`` alone, a map whose every value fits;
- a one-item list ``[layout]``: a list whose items fit (those that do not are
  left out).

A JSON null is read as absent, as the Kubernetes API server does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.problems import Problem

Layout = Any
"""A layout, as the module docstring describes (types, tuples, dicts and one-item lists nest freely)."""

# Kubernetes integers are int64; a number beyond that is not one, however it is written.
_INT_LIMIT = 2**63
_SHOWN = 40  # characters of a value quoted in a problem
_SHOWN_INTEGER = 1e15  # larger integral numbers are shown as the doubles they are


@dataclass(frozen=True)
class Conformed:
    """An object conformed to a layout, and what had to be left out."""

    value: dict[str, Any]
    problems: tuple[Problem, ...] = ()


# Condition entries as Kubernetes and Crossplane write them in status.conditions.
CONDITION: Layout = {"type": str, "status": str, "reason": str, "message": str, "lastTransitionTime": str}
CONDITIONS: Layout = {"status": {"conditions": [CONDITION]}}
METADATA: Layout = {"name": str, "namespace": str, "labels": {str: str}, "annotations": {str: str}}
# A Kubernetes resource quantity, written as a string ("8", "500m") or a number.
QUANTITY: Layout = (str, int, float)


def show(value: object) -> str:
    """A short description of a JSON value for a message: a number or a quoted prefix of a string, else its type."""
    if isinstance(value, str):
        return repr(value) if len(value) <= _SHOWN else f"a string of {len(value)} characters"
    if isinstance(value, float) and value.is_integer() and abs(value) < _SHOWN_INTEGER:
        value = int(value)  # protobuf carries every number as a double: show 3, not 3.0
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    return "a list" if isinstance(value, list) else "an object"


def _leaf(value: object, layout: type) -> tuple[bool, object]:
    if layout is object:
        return True, value
    if isinstance(value, bool):  # a bool is an int in Python, not in JSON
        return layout is bool, value
    if layout is bool or layout is str or not isinstance(value, int | float):
        return isinstance(value, layout), value
    if layout is int:
        fits = (isinstance(value, int) or value.is_integer()) and -_INT_LIMIT <= value < _INT_LIMIT
        return fits, int(value) if fits else value
    return layout is float, value


def _expected(layout: Layout) -> str:
    if isinstance(layout, tuple):
        return " or ".join(_expected(s) for s in layout)
    if isinstance(layout, dict):
        return "an object"
    if isinstance(layout, list):
        return "a list"
    return {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}.get(layout, "a value")


def _conform(value: object, layout: Layout, path: str, problems: list[Problem]) -> tuple[bool, object]:
    """Whether ``value`` fits ``layout`` at all, and the value with what does not fit inside it removed."""
    if isinstance(layout, tuple):
        for option in layout:
            nested: list[Problem] = []
            fits, out = _conform(value, option, path, nested)
            if fits:
                problems.extend(nested)
                return True, out
    elif isinstance(layout, dict):
        if isinstance(value, Mapping):
            return True, _object(value, layout, path, problems)
    elif isinstance(layout, list):
        if isinstance(value, list):
            return True, _list(value, layout[0], path, problems)
    else:
        fits, out = _leaf(value, layout)
        if fits:
            return True, out
    problems.append(Problem(path or "(the object)", f"expected {_expected(layout)}, got {show(value)}"))
    return False, value


def _object(value: Mapping[str, Any], layout: dict[Any, Layout], path: str, problems: list[Problem]) -> dict[str, Any]:
    out = dict(value)
    if set(layout) == {str}:
        fields = [(k, layout[str]) for k in value]
    else:
        fields = [(k, s) for k, s in layout.items() if k in value]
    for key, field_layout in fields:
        where = f"{path}.{key}" if path else str(key)
        if value[key] is None:
            del out[key]
            continue
        fits, conformed = _conform(value[key], field_layout, where, problems)
        if fits:
            out[key] = conformed
        else:
            del out[key]
    return out


def _list(value: list[Any], layout: Layout, path: str, problems: list[Problem]) -> list[Any]:
    out = []
    for index, item in enumerate(value):
        fits, conformed = _conform(item, layout, f"{path}[{index}]", problems)
        if fits:
            out.append(conformed)
    return out


def conform(obj: object, layout: dict[str, Layout]) -> Conformed:
    """``obj`` with every field ``layout`` declares made to fit it, and what was left out.

    Args:
        obj: A JSON value read from an input, expected to be an object.
        layout: The object's layout (a dict layout).

    Returns:
        The conformed object (empty when ``obj`` is not an object at all) and one problem per
        field left out, named by its path.
    """
    problems: list[Problem] = []
    if not isinstance(obj, Mapping):
        return Conformed({}, (Problem("(the object)", f"expected an object, got {show(obj)}"),))
    return Conformed(_object(obj, layout, "", problems), tuple(problems))
