"""Loopback ports for the servers tests and benchmarks start: a free one, and waiting until one listens."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Collection

HOST = "127.0.0.1"


def free_port(avoid: Collection[int] = ()) -> int:
    """A TCP port on 127.0.0.1 that is free now, never one of ``avoid``."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = int(s.getsockname()[1])
        if port not in avoid:
            return port


def listening(port: int, host: str = HOST) -> bool:
    """Whether something accepts connections on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def wait_listening(address: str, alive: Callable[[], bool], timeout: float) -> bool:
    """Whether ``host:port`` listens within ``timeout`` seconds while ``alive()`` holds.

    Polls the port itself: gRPC's reconnect backoff would add seconds to every start.
    """
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        if listening(int(port), host):
            return True
        time.sleep(0.05)
    return False
