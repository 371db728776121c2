"""A client's side of ``serve``, for the tests and scripts that start a server and call it: a
free port to start it on, waiting until it answers ``/health``, and a burst of simultaneous
connections (:func:`burst`)."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor


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


def _request(path: str, body: bytes) -> tuple[bytes, bytes]:
    """A POST's head and body, sent apart as most HTTP clients send them."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode(), body


def _outcome(answer: bytes) -> str:
    """``"200"``, ``"503"`` (with ``Retry-After``; without: ``"503 without Retry-After"``), the
    status, or ``"reset"`` for a connection closed before a whole status line."""
    head, _, _ = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        return "reset"
    headers = {line.split(":", 1)[0].strip().lower() for line in lines[1:] if ":" in line}
    if parts[1] == "503" and "retry-after" not in headers:
        return "503 without Retry-After"
    return parts[1]


def _exchange(port: int, request: tuple[bytes, bytes], timeout: float) -> str:
    """One connection: opened, the request sent, the answer read to its end."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            for part in request:
                sock.sendall(part)
            answer = b""
            while chunk := sock.recv(1 << 16):
                answer += chunk
    except TimeoutError:
        return "no answer"
    except OSError:  # refused, or reset by the server
        return "reset"
    return _outcome(answer)


def burst(port: int, n: int, text: str = "a b c", timeout: float = 300) -> dict[str, int]:
    """``n`` clients, each a thread, connecting to the server on ``port`` at once and sending
    one ``POST /translate`` of ``text``: how many were answered 200, 503 (with
    ``Retry-After``), another status, reset (or refused), or not answered within ``timeout``
    seconds."""
    request = _request("/translate", json.dumps({"text": text}).encode())
    start = threading.Barrier(n, timeout=60)  # every client ready, then all at once

    def client(_) -> str:
        start.wait()
        return _exchange(port, request, timeout)

    with ThreadPoolExecutor(n) as pool:
        return dict(Counter(pool.map(client, range(n))))
