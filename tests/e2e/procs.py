"""Start the e2e tier's processes, log each to its own file, and stop every one of them by PID.

Every process is started in its own session so that a signal meant for the
test run does not reach it half-way; ``stop`` ends them newest first
(SIGTERM, then SIGKILL after a grace period) and is safe to call twice, from a
fixture's teardown and from ``atexit`` alike.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


@dataclass
class Process:
    """One started process and where its output goes."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 20) -> str:
        """The last lines of the process's log."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class ProcessExitedError(RuntimeError):
    """A process the tier depends on is no longer running."""


class Supervisor:
    """Owns every process of one e2e run."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        self._procs: list[Process] = []
        self._lock = threading.Lock()
        atexit.register(self.stop)

    def start(
        self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> Process:
        """Start ``argv`` with stdout and stderr appended to ``<log_dir>/<name>.log``."""
        log = self.log_dir / f"{name}.log"
        with log.open("ab") as out:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
            )
        proc = Process(name, popen, log)
        with self._lock:
            self._procs.append(proc)
        return proc

    def check(self) -> None:
        """Raise if any started process has exited (with the tail of its log)."""
        for proc in self.processes():
            if not proc.alive():
                msg = f"{proc.name} (pid {proc.pid}) exited with {proc.popen.returncode}:\n{proc.tail()}"
                raise ProcessExitedError(msg)

    def processes(self) -> list[Process]:
        with self._lock:
            return list(self._procs)

    def stop_one(self, proc: Process, grace: float = 10.0) -> None:
        """Stop ``proc`` by its PID: SIGTERM, then SIGKILL once ``grace`` seconds have passed."""
        if proc.alive():
            try:
                os.kill(proc.pid, signal.SIGTERM)
                proc.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.popen.wait(timeout=grace)
            except ProcessLookupError:
                pass
        with self._lock:
            if proc in self._procs:
                self._procs.remove(proc)

    def stop(self) -> None:
        """Stop every process, newest first (clients before the servers they talk to)."""
        for proc in reversed(self.processes()):
            self.stop_one(proc)


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 0.2) -> T:
    """Call ``probe()`` until it returns something truthy; raise TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            value = probe()
        except Exception as err:  # noqa: BLE001 - a probe failing is "not yet"; the last error is reported
            last = err
        else:
            if value:
                return value
            last = value
        time.sleep(interval)
    msg = f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})"
    raise TimeoutError(msg)


@contextlib.contextmanager
def exclusive(path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (waiting up to ``timeout`` seconds for another holder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    msg = f"another e2e run has held {path} for {timeout:.0f}s"
                    raise TimeoutError(msg) from None
                time.sleep(1.0)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
