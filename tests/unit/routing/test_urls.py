"""parse_url: the URLs a ModelEndpoint may carry, and the problems named for those it may not."""

from __future__ import annotations

import pytest

from modelplane.routing import EndpointURL, HostKind, InvalidURLError, parse_url


@pytest.mark.parametrize(
    ("url", "want"),
    [
        pytest.param(
            "https://api.openai.com/v1", EndpointURL("https", "api.openai.com", HostKind.DNS, 443, "/v1"), id="saas"
        ),
        pytest.param("http://gw.example", EndpointURL("http", "gw.example", HostKind.DNS, 80, "/"), id="no-path"),
        pytest.param(
            "HTTP://GW.Example.:8080/", EndpointURL("http", "gw.example", HostKind.DNS, 8080, "/"), id="case-dot-port"
        ),
        pytest.param(
            "http://10.0.0.7/ml-team/llama-70b-0",
            EndpointURL("http", "10.0.0.7", HostKind.IPV4, 80, "/ml-team/llama-70b-0"),
            id="ipv4",
        ),
        pytest.param(
            "https://203.0.113.9:8443", EndpointURL("https", "203.0.113.9", HostKind.IPV4, 8443, "/"), id="ipv4-tls"
        ),
        pytest.param(
            "http://[fd00::1]:8080/ml-team/llama-70b",
            EndpointURL("http", "fd00::1", HostKind.IPV6, 8080, "/ml-team/llama-70b"),
            id="ipv6",
        ),
        pytest.param(
            "http://[FD00:0:0:0:0:0:0:1]", EndpointURL("http", "fd00::1", HostKind.IPV6, 80, "/"), id="ipv6-compressed"
        ),
        pytest.param(
            "http://[fd00::1:2:3]",
            EndpointURL("http", "fd00:0000:0000:0000:0000:0001:0002:0003", HostKind.IPV6, 80, "/"),
            id="ipv6-exploded-for-the-backend-pattern",
        ),
        pytest.param("http://svc:65535", EndpointURL("http", "svc", HostKind.DNS, 65535, "/"), id="single-label"),
    ],
)
def test_valid(url: str, want: EndpointURL) -> None:
    assert parse_url(url) == want


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        pytest.param("", "is not an absolute URL", id="empty"),
        pytest.param("api.openai.com/v1", "is not an absolute URL", id="no-scheme"),
        pytest.param("ftp://files.example", "scheme 'ftp' is not supported", id="ftp"),
        pytest.param("http://", "has no host", id="no-host"),
        pytest.param("http://:8080", "is not a DNS name of 1 to 253", id="port-only"),
        pytest.param("http://a.example:0", "port '0' is not a number from 1 to 65535", id="port-0"),
        pytest.param("http://a.example:65536", "port '65536'", id="port-too-big"),
        pytest.param("http://a.example:http", "port 'http'", id="port-name"),
        pytest.param("http://256.1.1.1", "'256.1.1.1' is not a valid IPv4 address", id="ipv4-octet"),
        pytest.param("http://10.0.0", "is not a valid IPv4 address", id="ipv4-short"),
        pytest.param("http://[fd00::1", "has no closing bracket", id="ipv6-bracket"),
        pytest.param("http://[fd00::g]", "is not a valid IPv6 address", id="ipv6-bad"),
        pytest.param("http://[fe80::1%eth0]", "has a zone ID", id="ipv6-zone"),
        pytest.param("http://[fd00::1]x", "unexpected 'x'", id="ipv6-trailing"),
        pytest.param("http://-bad.example", "label '-bad'", id="dns-label"),
        pytest.param("http://a_b.example", "label 'a_b'", id="dns-underscore"),
        pytest.param("http://a..b", "label ''", id="dns-empty-label"),
        pytest.param(f"http://{'a' * 64}.example", "must be 1 to 63", id="dns-long-label"),
        pytest.param("http://user:pw@a.example", "credentials", id="userinfo"),
        pytest.param("https://a.example/v1?key=x", "query or fragment", id="query"),
        pytest.param("https://a.example/v1#top", "query or fragment", id="fragment"),
    ],
)
def test_invalid(url: str, problem: str) -> None:
    with pytest.raises(InvalidURLError) as err:
        parse_url(url)
    assert problem in str(err.value)


def test_tls_follows_the_scheme() -> None:
    assert parse_url("https://a.example").tls
    assert not parse_url("http://a.example").tls
