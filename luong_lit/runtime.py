"""Process-wide CPU settings shared by training, decoding and the benchmarks.

* ``torch.set_num_threads``: ``None`` keeps torch's default.
* Denormal flushing: tiny LSTM gradients late in training otherwise stall x86 CPUs.
* glibc ``malloc`` tuning. PyTorch allocates CPU tensors with ``malloc``; glibc serves the
  large ones (the ``(rows, V)`` logits of every decoding step, several MB) from fresh
  ``mmap`` pages and hands freed heap memory back to the kernel, so each step pays page
  faults and zeroing again. Raising the mmap threshold to its maximum and never trimming
  keeps those blocks in the heap for reuse, as PyTorch's CPU tuning guide obtains with
  jemalloc or tcmalloc. Set ``LUONG_LIT_MALLOC_TUNE=0`` to leave ``malloc`` alone; other C
  libraries are left alone anyway.
"""

from __future__ import annotations

import ctypes
import os

import torch

from luong_lit.validate import integer

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameters, glibc's <malloc.h>
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # glibc's ceiling on 64-bit systems
TRIM_THRESHOLD = 1 << 30


def tune_malloc() -> bool:
    """Keep large freed blocks in the heap (glibc only). Returns whether ``mallopt`` took it."""
    if os.environ.get("LUONG_LIT_MALLOC_TUNE", "1") == "0":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process already runs on
    except (OSError, TypeError, AttributeError):  # no mallopt: macOS, Windows, some musl
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def configure_cpu(
    threads: int | None = None, flush_denormal: bool = True, malloc: bool = True
) -> None:
    """Apply the settings above; called once at the start of every command-line tool."""
    if threads:
        torch.set_num_threads(int(threads))
    torch.set_flush_denormal(bool(flush_denormal))
    if malloc:
        tune_malloc()


def configure_cpu_from(cfg) -> None:
    """:func:`configure_cpu` from a config's ``threads``, ``flush_denormal``, ``malloc_tune``."""
    integer("threads", cfg.get("threads"), 1, nullable=True)
    configure_cpu(cfg.get("threads"), cfg.get("flush_denormal", True), cfg.get("malloc_tune", True))
