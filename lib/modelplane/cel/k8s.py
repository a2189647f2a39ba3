"""Kubernetes' resource quantities and semantic versions as the CEL libraries see them.

Ports of ``resource.ParseQuantity`` (k8s.io/apimachinery) and ``semver.Parse``
(github.com/blang/semver/v4), keeping the details CEL can observe: which quantities Kubernetes
stores as an ``int64Amount`` (``isInteger`` and ``asInteger`` work only on those), rounding up to
nano precision, the cap on binary quantities, and ``AsApproximateFloat64``'s arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction

from modelplane.cel.values import INT64_MAX, INT64_MIN, Quantity, Semver

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_MAX_INT64_FACTORS = 18
# Exponents beyond this are refused rather than expanded (Kubernetes would keep them symbolic).
MAX_EXPONENT = 4096

# math.Pow10's tables, so that asApproximateFloat rounds exactly as Go does.
_POW10 = [float(f"1e{i}") for i in range(32)]
_POW10_POS32 = [float(f"1e{32 * i}") for i in range(10)]
_POW10_NEG32 = [float(f"1e-{32 * i}") for i in range(11)]


class QuantityError(ValueError):
    """Text that ``resource.ParseQuantity`` refuses."""


def parse_quantity(text: str) -> Quantity:
    """Parse a Kubernetes quantity such as ``80Gi``, ``1500m`` or ``1e3``.

    Raises:
        QuantityError: Kubernetes would refuse the text.

    """
    if not text:
        msg = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        raise QuantityError(msg)
    if text == "0":
        return Quantity(0, 0)
    positive, num, denom, suffix = _split(text)
    base, exponent, binary = _interpret(suffix)
    precision = -1
    scale = 0
    if not binary:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            value = int(num + denom)
            mantissa = (1 << exponent) if binary else 1
            result = value * mantissa
            if value <= INT64_MAX and INT64_MIN <= result <= INT64_MAX:
                return Quantity(result if positive else -result, scale)
    # The inf.Dec path: exact, rounded up to nano precision, binary values capped at max int64.
    amount = Fraction(int(num + denom), 10 ** len(denom))
    amount *= Fraction(10) ** exponent if base == 10 else 2**exponent
    if amount != 0:
        amount = Fraction(math.ceil(amount * 10**9), 10**9)
    if binary and amount > INT64_MAX:
        amount = Fraction(INT64_MAX)
    unscaled, dec_scale = _to_decimal(amount if positive else -amount)
    return Quantity(unscaled, dec_scale, dec=True)


def _split(text: str) -> tuple[bool, str, str, str]:
    positive = True
    pos, end = 0, len(text)
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        msg = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        raise QuantityError(msg)
    return positive, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, bool]:
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], False
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], True
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and all(c in _DIGITS for c in body):
            exponent = int(digits)
            if abs(exponent) > MAX_EXPONENT:
                msg = f"quantity exponent {exponent} is out of the range modelplane supports"
                raise QuantityError(msg)
            return 10, exponent, False
    msg = "unable to parse quantity's suffix"
    raise QuantityError(msg)


def _to_decimal(value: Fraction) -> tuple[int, int]:
    """``value`` (whose denominator divides a power of ten) as ``unscaled * 10**scale``."""
    scale = 0
    numerator, denominator = value.numerator, value.denominator
    while denominator != 1:
        numerator *= 10
        scale -= 1
        common = math.gcd(numerator, denominator)
        numerator, denominator = numerator // common, denominator // common
    return numerator, scale


def exact(q: Quantity) -> Fraction:
    """The exact value of a quantity."""
    return q.exact()


def compare_quantities(a: Quantity, b: Quantity) -> int:
    """``Quantity.Cmp``: -1, 0 or 1, exactly (both brought to the smaller power of ten)."""
    scale = min(a.scale, b.scale)
    x: int = a.unscaled * 10 ** (a.scale - scale)
    y: int = b.unscaled * 10 ** (b.scale - scale)
    return (x > y) - (x < y)


def quantity_sign(q: Quantity) -> int:
    """``Quantity.Sign``."""
    return (q.unscaled > 0) - (q.unscaled < 0)


def quantity_as_int64(q: Quantity) -> int | None:
    """``Quantity.AsInt64``: the value when Kubernetes holds it as an integral int64Amount."""
    if q.dec or q.scale < 0:
        return None
    value = q.unscaled * 10**q.scale
    return value if INT64_MIN <= value <= INT64_MAX else None


def quantity_as_float(q: Quantity) -> float:
    """``Quantity.AsApproximateFloat64``."""
    try:
        base = float(q.unscaled)
    except OverflowError:
        base = math.copysign(math.inf, q.unscaled)
    if q.scale == 0:
        return base
    return base * _pow10(q.scale)


def _pow10(n: int) -> float:
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG32[-n // 32] / _POW10[-n % 32]
    return 0.0 if n < 0 else math.inf


def add_quantities(a: Quantity, b: Quantity, *, negate: bool = False) -> Quantity:
    """``Quantity.Add`` (or ``Sub``); the result is boxed, as Kubernetes returns a pointer."""
    b_unscaled = -b.unscaled if negate else b.unscaled
    if not a.dec and not b.dec:
        scale = min(a.scale, b.scale)
        total = a.unscaled * 10 ** (a.scale - scale) + b_unscaled * 10 ** (b.scale - scale)
        operands_fit = all(
            INT64_MIN <= x <= INT64_MAX
            for x in (a.unscaled * 10 ** (a.scale - scale), b_unscaled * 10 ** (b.scale - scale))
        )
        if operands_fit and INT64_MIN <= total <= INT64_MAX:
            return Quantity(total, scale, boxed=True)
    unscaled, scale = _to_decimal(exact(a) + (-exact(b) if negate else exact(b)))
    return Quantity(unscaled, scale, dec=True, boxed=True)


def quantity_from_int(value: int) -> Quantity:
    """``resource.NewQuantity(value, DecimalExponent)``."""
    return Quantity(value, 0)


class SemverError(ValueError):
    """Text that ``semver.Parse`` refuses."""


_ALPHANUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
_UINT64_MAX = 2**64 - 1


def parse_semver(text: str, *, normalize: bool = False) -> Semver:  # noqa: PLR0912 (a port of semver.Parse)
    """``semver.Parse``, or the Kubernetes library's lenient form when ``normalize`` is set.

    Raises:
        SemverError: The text is not a semantic version.

    """
    if normalize:
        text = _normalize(text)
    if not text:
        msg = "Version string empty"
        raise SemverError(msg)
    parts = text.split(".", 2)
    if len(parts) != 3:
        msg = "No Major.Minor.Patch elements found"
        raise SemverError(msg)
    major = _version_number(parts[0], "major")
    minor = _version_number(parts[1], "minor")
    rest = parts[2]
    build: list[str] = []
    pre_text: list[str] = []
    if "+" in rest:
        rest, build_text = rest.split("+", 1)
        build = build_text.split(".")
    if "-" in rest:
        rest, pre = rest.split("-", 1)
        pre_text = pre.split(".")
    patch = _version_number(rest, "patch")
    prerelease: list[str | int] = []
    for part in pre_text:
        if not part:
            msg = "Prerelease is empty"
            raise SemverError(msg)
        if all(c in _DIGITS for c in part):
            if len(part) > 1 and part[0] == "0":
                msg = f"Numeric PreRelease version must not contain leading zeroes {part!r}"
                raise SemverError(msg)
            prerelease.append(int(part))
        elif all(c in _ALPHANUM for c in part):
            prerelease.append(part)
        else:
            msg = f"Invalid character(s) found in prerelease {part!r}"
            raise SemverError(msg)
    for part in build:
        if not part or not all(c in _ALPHANUM for c in part):
            msg = f"Invalid build meta data {part!r}"
            raise SemverError(msg)
    return Semver(major, minor, patch, tuple(prerelease), tuple(build))


def _version_number(text: str, what: str) -> int:
    if not all(c in _DIGITS for c in text):
        msg = f"Invalid character(s) found in {what} number {text!r}"
        raise SemverError(msg)
    if len(text) > 1 and text[0] == "0":
        msg = f"{what.capitalize()} number must not contain leading zeroes {text!r}"
        raise SemverError(msg)
    if not text or int(text) > _UINT64_MAX:
        msg = f"invalid {what} number {text!r}"
        raise SemverError(msg)
    return int(text)


def _normalize(text: str) -> str:
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            stripped = part.lstrip("0")
            if not stripped or stripped[0] not in _DIGITS:
                stripped = "0" + stripped
            parts[i] = stripped
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            msg = "short version cannot contain PreRelease/Build meta data"
            raise SemverError(msg)
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def semver_int(value: int) -> int:
    """A version number as CEL's int: Go converts the uint64 with wrap-around."""
    return value - 2**64 if value > INT64_MAX else value
