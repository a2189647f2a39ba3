"""Kubernetes resource quantities (``80Gi``, ``500m``, ``1e3``) as exact numbers."""

from __future__ import annotations

import re
from fractions import Fraction

_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<dec>[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity.

    Args:
        value: A quantity string such as ``"80Gi"``, or a plain number.

    Raises:
        QuantityError: ``value`` is not a quantity in Kubernetes' grammar.

    """
    if isinstance(value, bool):
        msg = f"quantity must be a number or string, not {value!r}"
        raise QuantityError(msg)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    match = _PATTERN.match(value.strip()) if value.strip() == value else None
    if match is None:
        msg = f"{value!r} is not a Kubernetes quantity (e.g. 80Gi, 500m, 1e3)"
        raise QuantityError(msg)
    number = Fraction(match["num"])
    if match["bin"]:
        return number * _BINARY[match["bin"]]
    if match["dec"]:
        return number * _DECIMAL[match["dec"]]
    if match["exp"]:
        return number * Fraction(10) ** int(match["exp"])
    return number
