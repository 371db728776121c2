"""Decode independent batches in several worker processes (``translate --workers N``).

On a CPU, batched beam search spends a good part of each step outside its large matrix
products: the search's own bookkeeping, small element-wise kernels and Python. Those parts
gain little from a second thread. Handing whole batches to processes that each own a share
of the threads keeps every core busy instead (CTranslate2 calls this ``inter_threads``).
The workers are forked, so they share the parent's model weights copy-on-write and load
nothing; each receives only the indices of its batch and returns that batch's results.
"""
from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, Iterator

import torch

_TASK: tuple[Callable, tuple] | None = None  # (function, shared arguments), inherited by fork


def _init(threads: int) -> None:
    torch.set_num_threads(threads)


def _run(item):
    fn, args = _TASK
    return fn(item, *args)


def check_workers(workers: int) -> None:
    """A clear error for a worker count that cannot run here."""
    if workers < 1:
        raise ValueError(f"--workers must be at least 1, got {workers}")
    if workers > 1 and "fork" not in mp.get_all_start_methods():
        raise ValueError("--workers above 1 needs the 'fork' start method, which this platform lacks")


def imap_workers(fn: Callable[..., Any], items: Iterable, workers: int = 1, *args) -> Iterator[Any]:
    """``fn(item, *args)`` for each item, in order, from ``workers`` forked processes.

    With one worker it runs in this process. Otherwise each worker gets
    ``max(1, torch.get_num_threads() // workers)`` threads; ``args`` (the model, the
    sources) reach the workers through the fork, never through pickling. A worker that dies
    (killed, out of memory) raises :class:`RuntimeError` here instead of leaving a hang.
    """
    global _TASK
    check_workers(workers)
    if workers == 1:
        yield from (fn(item, *args) for item in items)
        return
    threads = max(1, torch.get_num_threads() // workers)
    _TASK = (fn, args)
    try:
        pool = ProcessPoolExecutor(workers, mp.get_context("fork"), _init, (threads,))
        try:
            yield from pool.map(_run, items)
        finally:  # stopped early (an error, a closed generator): drop the batches not started
            pool.shutdown(wait=True, cancel_futures=True)
    except BrokenProcessPool as err:
        raise RuntimeError(f"a decoding worker process died ({err}); try fewer --workers") from None
    finally:
        _TASK = None
