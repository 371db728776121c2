"""A client's side of ``serve``, for scripts that start a server and call it: a free port to
start it on, and waiting until it answers ``/health``."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    """A TCP port of this machine that no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(proc: subprocess.Popen, port: int, timeout: float = 120) -> None:
    """Return once the server ``proc`` answers ``/health`` on ``port``; a ``RuntimeError``
    (the process killed) if it ends first or does not answer within ``timeout`` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server ended (exit {proc.returncode}) before it answered")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).close()
            return
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the server did not answer on port {port} within {timeout:.0f} s")
