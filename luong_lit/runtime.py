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
* Which process of a data-parallel run this is (:func:`process_rank`), known before any
  trainer exists, from the variables its launcher sets (torchrun's ``RANK``, Lightning's
  ``LOCAL_RANK``/``NODE_RANK`` for the ranks it starts, SLURM's ``SLURM_PROCID`` in a job of
  several tasks). What a run does once (its messages, ``job.json``, ``train.log``), rank 0
  does; the others write their own log beside it (:func:`own_log_file`).
"""

from __future__ import annotations

import ctypes
import logging
import os
from pathlib import Path

import torch

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
    """:func:`configure_cpu` from a config's ``threads``, ``flush_denormal``, ``malloc_tune``
    (checked by the run that reads them)."""
    configure_cpu(cfg.get("threads"), cfg.get("flush_denormal", True), cfg.get("malloc_tune", True))


# ------------------------------------------------------------------ which process this is
def process_rank() -> str:
    """This process's rank ("0" outside a data-parallel run): the global rank where the
    launcher says it, else ``NODE-LOCAL`` (Lightning's own ranks on several nodes)."""
    if os.environ.get("RANK"):
        return os.environ["RANK"]
    if int(os.environ.get("SLURM_NTASKS", "1")) > 1 and os.environ.get("SLURM_PROCID"):
        return os.environ["SLURM_PROCID"]
    local, node = os.environ.get("LOCAL_RANK", "0"), os.environ.get("NODE_RANK", "0")
    return local if node == "0" else f"{node}-{local}"


def is_rank_zero() -> bool:
    return process_rank() == "0"


def own_log_file(run_dir: Path) -> None:
    """On a rank other than 0: its log lines go to ``train.rank<N>.log``, not to the run's
    ``train.log`` (which Hydra opened for every process that runs the app)."""
    rank = process_rank()
    if rank == "0":
        return
    for handler in list(logging.root.handlers):
        if isinstance(handler, logging.FileHandler):
            logging.root.removeHandler(handler)
            handler.close()
            own = logging.FileHandler(Path(run_dir) / f"train.rank{rank}.log")
            own.setFormatter(handler.formatter)
            logging.root.addHandler(own)


#: the format of Hydra's own log lines (``conf/hydra``'s job logging: its default)
LOG_FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"


def log_like_the_run(run_dir: Path) -> None:
    """In a process Hydra did not start (a ``ddp_spawn`` rank), where the root logger has no
    handler: log lines as the run's own do, to the output and to ``train.log``."""
    import sys

    root = logging.root
    if root.handlers:
        return
    for handler in (logging.StreamHandler(sys.stdout), logging.FileHandler(run_dir / "train.log")):
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    root.setLevel(logging.INFO)


def ranks_start_as(module: str) -> None:
    """Lightning starts a data-parallel run's other ranks as ``python -m <the __main__
    module>`` with this process's arguments: started as ``python -m luong_lit CMD`` or
    ``luong-lit CMD``, whose arguments here are the command's alone, that module must be the
    command's own (``module``: ``luong_lit.train``)."""
    import importlib.util
    import sys

    import __main__

    spec = getattr(__main__, "__spec__", None)
    script = Path(sys.argv[0]).name
    if (spec is not None and spec.name in ("luong_lit", "luong_lit.__main__")) or (
        spec is None and script == "luong-lit"
    ):
        __main__.__spec__ = importlib.util.find_spec(module)
