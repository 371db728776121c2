"""A translation server: a small HTTP JSON API on aiohttp (``pip install -e ".[serve]"``).

``POST /translate`` with ``{"text": "one sentence"}`` or ``{"text": ["a", "b", ...]}`` answers
``{"translations": [...]}`` (one per sentence, in order); ``GET /health`` answers
``{"status": "ok", ...}``. Sentences of concurrent requests are decoded together: the batcher
collects up to ``max_batch`` sentences, or what has come within ``max_wait_ms`` of the first,
and runs one decode for all of them in a worker thread, so the event loop keeps accepting.
A request that is not JSON, has no text, has too many sentences or too long a sentence gets a
4xx with a message; an error inside decoding gets a 500 for that batch and the server goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger("luong_lit.serve")


@dataclass
class Limits:
    max_sentences: int = 64  # per request
    max_chars: int = 1000  # per sentence
    max_batch: int = 64  # sentences decoded together
    max_wait_ms: float = 10.0  # how long the first sentence of a batch waits for company
    max_body: int = 1 << 20  # bytes


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_request(body: bytes, limits: Limits) -> list[str]:
    """The sentences of a request body, or :class:`BadRequest` saying what is wrong."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadRequest(400, f"the body is not JSON: {err}") from None
    text = data.get("text") if isinstance(data, dict) else None
    if isinstance(text, str):
        text = [text]
    if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
        raise BadRequest(400, 'expected {"text": "a sentence"} or {"text": ["a", "b", ...]}')
    if not text:
        raise BadRequest(400, "no sentences to translate")
    if len(text) > limits.max_sentences:
        raise BadRequest(413, f"{len(text)} sentences; at most {limits.max_sentences} a request")
    for i, t in enumerate(text):
        if len(t) > limits.max_chars:
            raise BadRequest(
                413, f"sentence {i} has {len(t)} characters; at most {limits.max_chars}"
            )
        if "\n" in t or "\r" in t:
            raise BadRequest(400, f"sentence {i} holds a line break; send one sentence per item")
    return text


class Batcher:
    """Sentences from many requests, decoded together by ``translate`` (lines in, lines out)."""

    def __init__(self, translate: Callable[[Sequence[str]], list[str]], limits: Limits) -> None:
        self.translate, self.limits = translate, limits
        self.queue: asyncio.Queue = asyncio.Queue()
        self.batches = 0  # decodes run, for the health endpoint and the load benchmark
        self._task: asyncio.Task | None = None

    async def submit(self, sentences: list[str]) -> list[str]:
        future = asyncio.get_running_loop().create_future()
        await self.queue.put((sentences, future))
        return await future

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _collect(self) -> list[tuple[list[str], asyncio.Future]]:
        first = await self.queue.get()
        items, size = [first], len(first[0])
        deadline = asyncio.get_running_loop().time() + self.limits.max_wait_ms / 1000
        while size < self.limits.max_batch:
            timeout = deadline - asyncio.get_running_loop().time()
            if timeout <= 0:
                break
            try:
                item = await asyncio.wait_for(self.queue.get(), timeout)
            except asyncio.TimeoutError:
                break
            items.append(item)
            size += len(item[0])
        return items

    async def _run(self) -> None:
        while True:
            items = await self._collect()
            lines = [s for sentences, _ in items for s in sentences]
            try:
                out = await asyncio.to_thread(self.translate, lines)
            except Exception as err:  # noqa: BLE001 - one failed batch must not stop the server
                log.exception("decoding failed")
                for _, future in items:
                    future.set_exception(err)
                continue
            self.batches += 1
            start = 0
            for sentences, future in items:
                future.set_result(out[start : start + len(sentences)])
                start += len(sentences)


def make_app(translate: Callable[[Sequence[str]], list[str]], limits: Limits, info: dict):
    """The aiohttp application around ``translate``."""
    from aiohttp import web

    batcher = Batcher(translate, limits)

    async def on_translate(request: web.Request) -> web.Response:
        try:
            sentences = parse_request(await request.read(), limits)
        except BadRequest as err:
            return web.json_response({"error": str(err)}, status=err.status)
        try:
            out = await batcher.submit(sentences)
        except Exception as err:  # noqa: BLE001
            return web.json_response({"error": f"decoding failed: {err}"}, status=500)
        return web.json_response({"translations": out})

    async def on_health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "batches": batcher.batches, **info})

    async def on_startup(app) -> None:
        batcher.start()

    async def on_cleanup(app) -> None:
        await batcher.stop()

    app = web.Application(client_max_size=limits.max_body)
    app.router.add_post("/translate", on_translate)
    app.router.add_get("/health", on_health)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app
