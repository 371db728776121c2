"""Decode independent batches in several worker processes (``translate --workers N``).

On a CPU, batched beam search spends a good part of each step outside its large matrix
products: the search's own bookkeeping, small element-wise kernels and Python. Those parts
gain little from a second thread. Handing whole batches to one-thread processes, one per
core, keeps every core busy instead (CTranslate2 calls this ``inter_threads``).
The workers are forked, so they share the parent's model weights copy-on-write and load
nothing; each receives only the indices of its batch and returns that batch's results.

Each worker runs one thread: torch's CPU builds use GNU OpenMP, which is not fork-safe, and
a forked child that starts a team of threads after its parent has used one can hang. So
``--workers N`` means N single-thread processes: give as many workers as cores.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import torch

Item = TypeVar("Item")
Result = TypeVar("Result")
#: (function, shared arguments), inherited by fork
_TASK: tuple[Callable[..., Any], tuple[Any, ...]] | None = None


def _init() -> None:
    torch.set_num_threads(1)  # more threads after a fork can hang in GNU OpenMP (see above)


def _run(item: Any) -> Any:
    if _TASK is None:
        raise RuntimeError("a decoding worker has no task (imap_workers sets it before the fork)")
    fn, args = _TASK
    return fn(item, *args)


def check_workers(workers: int) -> None:
    """A clear error for a worker count that cannot run here."""
    if workers < 1:
        raise ValueError(f"--workers must be at least 1, got {workers}")
    if workers > 1 and "fork" not in mp.get_all_start_methods():
        raise ValueError(
            "--workers above 1 needs the 'fork' start method, which this platform lacks"
        )


def imap_workers(
    fn: Callable[..., Result], items: Iterable[Item], workers: int = 1, *args: object
) -> Iterator[Result]:
    """``fn(item, *args)`` for each item, in order, from ``workers`` forked processes.

    With one worker it runs in this process. Otherwise each worker is a process of one
    thread; ``args`` (the model, the sources) reach the workers through the fork, never
    through pickling. A worker that dies (killed, out of memory) raises
    :class:`RuntimeError` here instead of leaving a hang.
    """
    global _TASK
    check_workers(workers)
    if workers == 1:
        yield from (fn(item, *args) for item in items)
        return
    _TASK = (fn, args)
    try:
        pool = ProcessPoolExecutor(workers, mp.get_context("fork"), _init)
        try:
            yield from pool.map(_run, items)
        finally:  # stopped early (an error, a closed generator): drop the batches not started
            pool.shutdown(wait=True, cancel_futures=True)
    except BrokenProcessPool as err:
        raise RuntimeError(f"a decoding worker process died ({err}); try fewer --workers") from None
    finally:
        _TASK = None
