"""Parse a ModelEndpoint's ``spec.url`` into what an Envoy Gateway Backend needs."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from enum import StrEnum

_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)(?P<path>[^?#]*)(?P<rest>[?#].*)?$")
_PORT = re.compile(r"^[0-9]{1,5}$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DOTTED_NUMBERS = re.compile(r"^[0-9.]+$")
# The Backend CRD's pattern for IPv6 addresses accepts only some compressed forms.
_BACKEND_IPV6 = re.compile(
    r"^(([0-9a-fA-F]{1,4}:){1,7}[0-9a-fA-F]{1,4}|::|(([0-9a-fA-F]{1,4}:){0,5})?(:[0-9a-fA-F]{1,4}){1,2})$"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_MAX_DNS_NAME = 253


class HostKind(StrEnum):
    """How an endpoint's host is written."""

    DNS = "DNS"
    IPV4 = "IPv4"
    IPV6 = "IPv6"


@dataclass(frozen=True)
class EndpointURL:
    """A parsed endpoint URL.

    Attributes:
        scheme: ``http`` or ``https``.
        host: The host as a Backend endpoint takes it: a lower-case DNS name without a
            trailing dot, or an IP address (IPv6 without brackets).
        kind: How the host is written.
        port: The port, the scheme's default when the URL has none.
        path: The URL's path (``/`` when it has none); informational.
    """

    scheme: str
    host: str
    kind: HostKind
    port: int
    path: str

    @property
    def tls(self) -> bool:
        """Whether the gateway talks TLS to the endpoint."""
        return self.scheme == "https"


class InvalidURLError(ValueError):
    """An endpoint URL that cannot be routed to; the message names the problem."""


def parse_url(url: str) -> EndpointURL:
    """Parse an endpoint URL: http(s), a DNS name, IPv4 or bracketed IPv6 address, a port and a path.

    Raises:
        InvalidURLError: the URL is malformed; the message says which part and why.
    """
    m = _URL.match(url.strip())
    if m is None:
        msg = f"{url!r} is not an absolute URL (expected http://host[:port][/path] or https://...)"
        raise InvalidURLError(msg)
    scheme = m["scheme"].lower()
    if scheme not in _DEFAULT_PORTS:
        msg = f"scheme {m['scheme']!r} is not supported: use http or https"
        raise InvalidURLError(msg)
    if m["rest"]:
        msg = "a query or fragment is not allowed: the URL is a base URL"
        raise InvalidURLError(msg)
    if any(c.isspace() for c in m["path"]):
        msg = f"path {m['path']!r} contains whitespace"
        raise InvalidURLError(msg)
    host, kind, port = _authority(m["authority"], _DEFAULT_PORTS[scheme])
    return EndpointURL(scheme=scheme, host=host, kind=kind, port=port, path=m["path"] or "/")


def _authority(authority: str, default_port: int) -> tuple[str, HostKind, int]:
    if not authority:
        msg = "the URL has no host"
        raise InvalidURLError(msg)
    if "@" in authority:
        msg = "credentials in the URL are not allowed: the gateway would not send them"
        raise InvalidURLError(msg)
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            msg = f"IPv6 address {authority!r} has no closing bracket"
            raise InvalidURLError(msg)
        host, port_text = authority[1:end], authority[end + 1 :]
        if port_text and not port_text.startswith(":"):
            msg = f"unexpected {port_text!r} after the IPv6 address"
            raise InvalidURLError(msg)
        return _ipv6(host), HostKind.IPV6, _port(port_text[1:], default_port) if port_text else default_port
    host, sep, port_text = authority.partition(":")
    port = _port(port_text, default_port) if sep else default_port
    if _DOTTED_NUMBERS.match(host):
        return _ipv4(host), HostKind.IPV4, port
    return _dns(host), HostKind.DNS, port


def _port(text: str, default: int) -> int:
    if text == "":
        return default
    if not _PORT.match(text) or not 1 <= int(text) <= 65535:
        msg = f"port {text!r} is not a number from 1 to 65535"
        raise InvalidURLError(msg)
    return int(text)


def _ipv4(host: str) -> str:
    try:
        return str(ipaddress.IPv4Address(host))
    except ipaddress.AddressValueError as err:
        msg = f"{host!r} is not a valid IPv4 address: {err}"
        raise InvalidURLError(msg) from err


def _ipv6(host: str) -> str:
    if "%" in host:
        msg = f"IPv6 address {host!r} has a zone ID, which only means something on one host"
        raise InvalidURLError(msg)
    try:
        address = ipaddress.IPv6Address(host)
    except ipaddress.AddressValueError as err:
        msg = f"{host!r} is not a valid IPv6 address: {err}"
        raise InvalidURLError(msg) from err
    compressed = address.compressed
    return compressed if _BACKEND_IPV6.match(compressed) else address.exploded


def _dns(host: str) -> str:
    name = host.lower().removesuffix(".")
    if not name or len(name) > _MAX_DNS_NAME:
        msg = f"host {host!r} is not a DNS name of 1 to {_MAX_DNS_NAME} characters"
        raise InvalidURLError(msg)
    for label in name.split("."):
        if len(label) > 63 or not _DNS_LABEL.match(label):
            msg = (
                f"host {host!r} is not a valid DNS name: label {label!r} must be 1 to 63 letters, digits "
                "or '-', starting and ending with a letter or digit"
            )
            raise InvalidURLError(msg)
    return name
