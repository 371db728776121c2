"""The loader processes of a run's batches: how many, started how, and whether the batches go
through pinned memory (:func:`loader_workers`). The batches are the same either way: the batch
sampler runs in the training process."""

from __future__ import annotations

import multiprocessing
from typing import Any

GPU_WORKERS = 2  #: loader processes of a GPU run where ``num_workers`` is unset


def worker_context(workers: int) -> dict[str, Any]:
    """The loader processes' start method, named: the platform's own (``fork`` on Linux), not
    whatever the process's default has become. A sweep job in a joblib (loky) worker has loky's
    as its default, whose processes a DataLoader cannot start."""
    if workers < 1:
        return {}
    method = multiprocessing.get_all_start_methods()[0]  # the platform's default comes first
    return {"multiprocessing_context": multiprocessing.get_context(method)}


def loader_workers(num_workers: int | None, on_gpu: bool) -> dict[str, Any]:
    """A DataLoader's keywords: ``num_workers`` processes (None: none on a CPU); on a GPU,
    :data:`GPU_WORKERS` kept from epoch to epoch by default, and batches in pinned memory,
    copied to the device without a wait."""
    workers = num_workers
    if workers is None:
        workers = GPU_WORKERS if on_gpu else 0
    kwargs: dict[str, Any] = {"num_workers": workers, **worker_context(workers)}
    if on_gpu:
        kwargs.update(pin_memory=True, persistent_workers=workers > 0)
    return kwargs
