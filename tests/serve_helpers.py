"""Starting ``serve`` in a subprocess, calling its JSON API and opening its page in headless
Chromium (Selenium with Debian's ``chromium`` and ``chromium-driver``), for the server's tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import luong_lit
from scripts.serve_client import free_port, wait_until_up

REPO = Path(__file__).resolve().parents[1]


def call(port: int, path: str, body: bytes | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body,
                                 method="POST" if body is not None else "GET")  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def post(port: int, body: bytes, path: str = "/translate") -> tuple[int, dict]:
    return call(port, path, body)


def start_server(*args: str, request_log: bool = False) -> tuple[subprocess.Popen, int, str]:
    """``python -m luong_lit serve ARGS`` on a free port, once it answers; and what it printed.
    Its request lines only with ``request_log`` (nothing reads its standard error as it runs)."""
    port = free_port()
    quiet = [] if request_log else ["--no-request-log"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "luong_lit", "serve", *args, *quiet, "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    try:
        wait_until_up(proc, port)
    except RuntimeError as err:
        raise AssertionError(f"{err}: {proc.stderr.read()}") from None
    banner = [proc.stdout.readline() for _ in range(3)]
    return proc, port, "".join(banner)


#: the decoding of the module's server (a toy model's outputs are at least as long as its input)
OPTS = {"beam": 2, "max_src_len": 5, "min_len_ratio": 1.0}


def load(ckpt, **changes):
    return luong_lit.load(ckpt, **{**OPTS, **changes})


#: the arguments of the server the modules share: two models side by side, decoding as OPTS
def two_model_args(lowercase_model, local_p_model) -> list[str]:
    return [
        f"global={lowercase_model}", f"local_p={local_p_model}", "--beam", "2",
        "--max-sentences", "3", "--max-chars", "40", "--max-wait-ms", "300", "--max-src-len", "5",
        "--min-len-ratio", "1.0",
    ]  # fmt: skip


#: Chromium's flags for a headless run on a machine with no network beyond localhost
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def browser_programs() -> tuple[str | None, str | None]:
    """The installed Chromium and its driver (Debian's ``chromium`` and ``chromium-driver``)."""
    browser = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
    return browser, shutil.which("chromedriver")


def open_browser(width: int = 1400, height: int = 900):
    """A headless Chromium under Selenium, driven through the system's ``chromedriver`` (nothing
    is downloaded)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    browser, driver = browser_programs()
    options = Options()
    options.binary_location = browser
    for flag in [*CHROMIUM_FLAGS, f"--window-size={width},{height}"]:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))
