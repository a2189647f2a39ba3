"""A throwaway CA, server and client certificate for the mTLS tests."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.pki import CA


@dataclass(frozen=True)
class Pem:
    cert: bytes
    key: bytes


def write_tls_dir(directory: Path) -> tuple[bytes, Pem]:
    """Write ca.crt, tls.crt and tls.key for a server into ``directory``; return the CA's and a client's PEMs."""
    with tempfile.TemporaryDirectory() as scratch:
        ca = CA(Path(scratch))
        server, client = ca.issue("localhost"), ca.issue("crossplane")
        directory.mkdir(parents=True, exist_ok=True)
        for path in (server.ca, server.cert, server.key):
            shutil.copyfile(path, directory / path.name)
        return ca.pem, Pem(client.cert.read_bytes(), client.key.read_bytes())
