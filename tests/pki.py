"""A self-made CA for what the tests serve on loopback, and the certificates it signs.

In the e2e tier, the API servers' serving certificates, the service-account
signing key, the functions' mTLS server certificate, Crossplane core's client
certificate and provider-kubernetes' webhook certificate all come from one CA,
so every party trusts every other through the one ``ca.crt``. The gRPC and
image tiers take a function's server and client certificates from one too.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_LOOPBACK = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class TLSDir:
    """A directory in the layout Crossplane and its functions read: ca.crt, tls.crt, tls.key."""

    path: Path

    @property
    def ca(self) -> Path:
        return self.path / "ca.crt"

    @property
    def cert(self) -> Path:
        return self.path / "tls.crt"

    @property
    def key(self) -> Path:
        return self.path / "tls.key"


class CA:
    """A certificate authority valid for the test run, writing what it signs under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "modelplane-test-ca")])
        self._cert = (
            self._builder(name, name, self._key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.pem = _pem_cert(self._cert)
        self.cert_path = root / "ca.crt"
        self.cert_path.write_bytes(self.pem)

    def _builder(
        self, subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey
    ) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._now)
            .not_valid_after(self._now + datetime.timedelta(days=2))
        )

    def issue(self, name: str, *, organization: str | None = None, dns: tuple[str, ...] = ()) -> TLSDir:
        """Write ``<root>/<name>/{ca.crt,tls.crt,tls.key}``: a 127.0.0.1 certificate that serves and authenticates.

        ``dns`` adds names it is valid for (a Service's ``<name>.<namespace>.svc``, which the
        aggregation layer checks an APIService's server against).
        """
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, name)]
        if organization:
            attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        cert = (
            self._builder(x509.Name(attributes), self._cert.subject, key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([*_LOOPBACK, *map(x509.DNSName, dns)]), critical=False)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        out = TLSDir(self.root / name)
        out.path.mkdir(parents=True, exist_ok=True)
        out.ca.write_bytes(self.pem)
        out.cert.write_bytes(_pem_cert(cert))
        out.key.write_bytes(_pem_key(key))
        return out

    def signing_key(self, name: str) -> tuple[Path, Path]:
        """Write a key pair (private, public PEM) for signing service-account tokens."""
        key = ec.generate_private_key(ec.SECP256R1())
        private, public = self.root / f"{name}.key", self.root / f"{name}.pub"
        private.write_bytes(_pem_key(key))
        public.write_bytes(
            key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        return private, public
