"""Where a batch run reads its input and writes its output: https://, s3:// or pvc:// locations."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from modelplane.problems import Problem


class Scheme(StrEnum):
    """How a location is reached."""

    HTTPS = "https"
    S3 = "s3"
    PVC = "pvc"


@dataclass(frozen=True)
class Location:
    """One file of a run.

    Attributes:
        uri: The URI as written.
        scheme: How it is reached.
        claim: For pvc://, the PersistentVolumeClaim (in the run's namespace on its cluster).
        path: For pvc://, the file's path inside the claim.
        secret: The Secret with its credentials ("" for none).
    """

    uri: str
    scheme: Scheme
    claim: str = ""
    path: str = ""
    secret: str = ""


class InvalidLocationError(ValueError):
    """A location that cannot be read or written, naming its field."""

    def __init__(self, problem: Problem) -> None:
        """Carry the problem; the message is its ``field: message`` form."""
        super().__init__(str(problem))
        self.problem = problem


# As the XRD's rules say it; the function repeats them for a run admission did not check.
_SHAPES = {
    Scheme.HTTPS: re.compile(r"^https://[^/?#]+/[^?#]*[^/?#].*$"),
    Scheme.S3: re.compile(r"^s3://[a-z0-9][a-z0-9.-]*/[^/].*$"),
    Scheme.PVC: re.compile(r"^pvc://([a-z0-9]([-a-z0-9.]*[a-z0-9])?)/([^/].*)$"),
}
_HINTS = {
    Scheme.HTTPS: "https://<host>/<path>",
    Scheme.S3: "s3://<bucket>/<key>",
    Scheme.PVC: "pvc://<claim>/<path>",
}
_MAX_CLAIM = 253


def location(uri: str, field: str, secret: str = "") -> Location:
    """Read ``uri`` (of spec field ``field``).

    Raises:
        InvalidLocationError: An unknown scheme, or a URI that does not name a file that way.
    """
    scheme_text, sep, _ = uri.partition("://")
    if not sep or scheme_text not in {s.value for s in Scheme}:
        shown = f"{scheme_text}://" if sep else repr(uri[:40])
        raise InvalidLocationError(Problem(field, f"unknown scheme {shown}: use https://, s3:// or pvc://"))
    scheme = Scheme(scheme_text)
    match = _SHAPES[scheme].match(uri)
    if match is None:
        raise InvalidLocationError(Problem(field, f"{uri[:80]!r} does not name a file: write {_HINTS[scheme]}"))
    if scheme is Scheme.PVC:
        claim, path = match.group(1), match.group(3)
        if len(claim) > _MAX_CLAIM or ".." in path.split("/"):
            raise InvalidLocationError(
                Problem(field, f"{uri[:80]!r}: the claim or the path is not one Kubernetes mounts")
            )
        return Location(uri, scheme, claim=claim, path=path)
    return Location(uri, scheme, secret=secret)
