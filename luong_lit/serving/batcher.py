"""Sentences of concurrent requests, decoded together.

The batcher collects requests for up to ``max_batch`` sentences, or for what has come within
``max_wait_ms`` of the first, then decodes each group of requests that ask for the same model
and decoding in one call, in a worker thread, so the event loop keeps accepting. It counts the
requests waiting (for the server's ``--max-queue``) and how long a decode takes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Hashable

log = logging.getLogger("luong_lit.serve")
Job = Callable[[list[str]], list]  # lines in, one result per line out


class Batcher:
    """``await submit(key, job, sentences)``: the results of ``job`` for ``sentences``, computed
    with those of other requests of the same ``key``."""

    def __init__(self, max_batch: int, max_wait_ms: float) -> None:
        self.max_batch, self.max_wait = max_batch, max_wait_ms / 1000
        self.queue: asyncio.Queue = asyncio.Queue()
        self.batches = 0  # decodes run, for the health endpoint and the load benchmark
        self.waiting = 0  # requests submitted and not yet answered
        self.seconds = 0.0  # a decode's time, on average over the recent ones
        self._task: asyncio.Task | None = None

    async def submit(self, key: Hashable, job: Job, sentences: list[str]) -> list:
        future = asyncio.get_running_loop().create_future()
        self.waiting += 1
        try:
            await self.queue.put((key, job, sentences, future))
            return await future
        finally:
            self.waiting -= 1

    def retry_after(self) -> int:
        """Whole seconds until the requests waiting now are likely answered (at least 1)."""
        return max(1, math.ceil(self.seconds * (1 + self.waiting / self.max_batch)))

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _collect(self) -> list[tuple]:
        loop = asyncio.get_running_loop()
        first = await self.queue.get()
        items, size, deadline = [first], len(first[2]), loop.time() + self.max_wait
        while size < self.max_batch:
            timeout = deadline - loop.time()
            if timeout <= 0:
                break
            try:
                item = await asyncio.wait_for(self.queue.get(), timeout)
            except asyncio.TimeoutError:
                break
            items.append(item)
            size += len(item[2])
        return items

    async def _run(self) -> None:
        while True:
            groups: dict[Hashable, list[tuple]] = {}
            for item in await self._collect():
                groups.setdefault(item[0], []).append(item)
            for items in groups.values():
                try:
                    await self._decode(items)
                except Exception:  # noqa: BLE001 - the loop must outlive any one batch
                    log.exception("a batch could not be answered")

    async def _decode(self, items: list[tuple]) -> None:
        lines = [s for _, _, sentences, _ in items for s in sentences]
        started = time.perf_counter()
        try:
            out = await asyncio.to_thread(items[0][1], lines)
        except Exception as err:  # noqa: BLE001 - one failed batch must not stop the server
            log.exception("decoding failed")
            for *_, future in items:
                if not future.done():  # a request whose client left is cancelled
                    future.set_exception(err)
            return
        self.batches += 1
        self.seconds += (time.perf_counter() - started - self.seconds) / min(self.batches, 10)
        start = 0
        for _, _, sentences, future in items:
            if not future.done():
                future.set_result(out[start : start + len(sentences)])
            start += len(sentences)
