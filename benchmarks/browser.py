"""Headless Chromium, driven over the DevTools protocol: open a page, type, click, read the DOM,
take a screenshot. Used by the attention page's test and by ``python -m benchmarks.page_shot``.

Debian's ``chromium`` package is the browser (``.ci/run`` installs it when missing); the
protocol is spoken over a websocket with aiohttp, so nothing else is installed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
]


def chromium() -> str | None:
    """The browser's executable, if one is installed."""
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


class Browser:
    """A headless Chromium with one page (``async with Browser() as b: await b.open(url)``)."""

    def __init__(self, width: int = 1400, height: int = 900) -> None:
        self.size = (width, height)
        self._ids = 0

    async def __aenter__(self) -> Browser:
        import aiohttp

        exe = chromium()
        if exe is None:
            raise RuntimeError("no chromium: install Debian's chromium package")
        self.profile = tempfile.mkdtemp(prefix="luong_lit_chromium_")
        size = f"--window-size={self.size[0]},{self.size[1]}"
        args = [exe, *FLAGS, size, f"--user-data-dir={self.profile}", "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = self._port()
        self.http = aiohttp.ClientSession()
        async with self.http.get(f"http://127.0.0.1:{port}/json/list") as res:
            page = next(t for t in await res.json() if t["type"] == "page")
        self.ws = await self.http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        await self.send("Page.enable")
        await self.send("Runtime.enable")
        return self

    def _port(self, timeout: float = 30.0) -> int:
        marker = Path(self.profile) / "DevToolsActivePort"
        deadline = time.time() + timeout
        while not marker.is_file() or not marker.read_text().strip():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("chromium did not start")
            time.sleep(0.05)
        return int(marker.read_text().split()[0])

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()
        await self.http.close()
        self.proc.kill()
        self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)

    async def send(self, method: str, **params) -> dict[str, Any]:
        """One protocol command, and its result (events that arrive meanwhile are dropped)."""
        self._ids += 1
        await self.ws.send_str(json.dumps({"id": self._ids, "method": method, "params": params}))
        while True:
            msg = json.loads((await self.ws.receive()).data)
            if msg.get("id") == self._ids:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    async def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        res = await self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression}: {res['exceptionDetails']}")
        return res["result"].get("value")

    async def open(self, url: str, ready: str = "document.body.dataset.ready === 'yes'") -> None:
        await self.send("Page.navigate", url=url)
        await self.wait_for(ready)

    async def wait_for(self, condition: str, timeout: float = 60.0) -> None:
        deadline = time.time() + timeout
        check = (
            f"(() => {{ try {{ return Boolean({condition}); }} catch (e) {{ return false; }} }})()"
        )
        while not await self.eval(check):
            if time.time() > deadline:
                raise TimeoutError(condition)
            await asyncio.sleep(0.1)

    async def type_into(self, selector: str, text: str) -> None:
        """Focus an element and type ``text`` into it, as a keyboard would insert it."""
        await self.eval(f"document.querySelector({json.dumps(selector)}).focus()")
        await self.send("Input.insertText", text=text)

    async def click(self, selector: str) -> None:
        await self.eval(f"document.querySelector({json.dumps(selector)}).click()")

    async def screenshot(self, path: str | Path) -> Path:
        """A PNG of the whole page."""
        width, height = await self.eval(
            "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
        )
        await self.send("Emulation.setDeviceMetricsOverride", width=max(width, self.size[0]),
                        height=max(height, 300), deviceScaleFactor=1, mobile=False)  # fmt: skip
        shot = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
