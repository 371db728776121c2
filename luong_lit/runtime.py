"""Process-wide settings shared by training, decoding and the benchmarks.

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
* CUDA's start on a thread of its own (:func:`cuda_starting`), while the data are read.
* What the process's log drops (:func:`quiet`): the libraries' routine notices, each named
  there with why it tells a user nothing; the kit's lines and real warnings stay.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
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
    ``train.log`` (which Hydra opened for every process that runs the app; the empty file
    Hydra made under the name Lightning gives a rank it starts,
    ``train_ddp_process_<LOCAL_RANK>.log``, goes), and its console shows its warnings and errors
    only: the run's lines are said once, by rank 0."""
    rank = process_rank()
    if rank == "0":
        return
    for handler in list(logging.root.handlers):
        if isinstance(handler, logging.FileHandler):
            logging.root.removeHandler(handler)
            handler.close()
            made = Path(handler.baseFilename)
            ddp_named = re.fullmatch(r"train_ddp_process_\d+\.log", made.name)
            if ddp_named and made.is_file() and not made.stat().st_size:
                made.unlink()
            own = logging.FileHandler(Path(run_dir) / f"train.rank{rank}.log")
            own.setFormatter(handler.formatter)
            logging.root.addHandler(own)
        elif isinstance(handler, logging.StreamHandler):
            handler.setLevel(max(handler.level, logging.WARNING))


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


# ------------------------------------------------------------------ what the log drops
DROPPED_WARNINGS = (
    r"(?s).*isinstance\(treespec, LeafSpec\)` is deprecated",
    r"(?s).*ModelCheckpoint\(monitor='val/ppl'\)`? could not find the monitored key",
    r"(?s).*is validated against ConfigStore schema",
    r"(?s)It is recommended to use `self\.log\('(val|test)/.*sync_dist=True",
)
RESUME_WARNINGS = (r"(?s)Checkpoint directory .* exists and is not empty",)
DROPPED_LINES = (
    "try installing [litlogger]",
    "GPU available: ",
    "TPU available: ",
    "HPU available: ",
    "Restoring states from the checkpoint path at ",
    "Restored all states from the checkpoint at ",
    "Loaded model weights from the checkpoint at ",
    "Found current_model_state in the checkpoint",
    "Received SIGTERM: ",
    "`Trainer.fit` stopped: ",
    "callbacks returned in `LightningModule.configure_callbacks` will override",
)
RANK_ZERO_LOGGERS = (
    "lightning.pytorch.utilities.rank_zero",
    "lightning_fabric.utilities.rank_zero",
    "lightning.pytorch.trainer.connectors.signal_connector",
)


class _DropRoutine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in DROPPED_LINES)


def quiet(resuming: bool = False) -> None:
    """Install the filters (idempotent); ``resuming``: those of a resumed run too. They drop:

    * Lightning's tip to install ``litlogger`` (an advertisement, on every trainer);
    * Lightning's ``GPU available: ..., used: ...``, ``TPU available`` and ``HPU available`` lines,
      on every run: the device a run uses is its ``trainer`` option (a GPU left unused still
      gets Lightning's warning, which stays);
    * torch's ``LeafSpec`` deprecation (raised inside Lightning's own code, not ours);
    * ``ModelCheckpoint(monitor='val/ppl') could not find the monitored key`` before the first
      validation: a short run has no ``best.ckpt`` yet, and its last lines say which checkpoint to
      use (:func:`luong_lit.training.run_lines.done_message`);
    * Lightning's advice to log an epoch's figures with ``sync_dist=True`` in a data-parallel run:
      the kit's dev and test figures are computed from every rank's share already (summed
      metrics, gathered translations: :mod:`luong_lit.training.sharded`), the same on every rank;
    * Hydra's "validated against ConfigStore schema" notice about its own launchers' configs (a
      joblib worker imports the app's module, and with it this filter, before Hydra loads them);
    * on a resume only (``quiet(resuming=True)``), Lightning's "Checkpoint directory ... exists
      and is not empty": the run's own folder, where the resumed run belongs;
    * Lightning's lines as it restores a checkpoint ("Restoring states from the checkpoint
      path", "Restored all states", "Loaded model weights", the weight averaging's "Found
      current_model_state"): a resume says in its own line what it resumes and at which step, and
      the final test's checkpoint is named in ``results.json``;
    * Lightning's "Received SIGTERM" and "Trainer.fit stopped" lines: a run stopped by a signal
      ends with its own line (what was saved, and the command that resumes it), and one that ends
      by its budget, early stopping or its schedule says so in the kit's lines;
    * Lightning's note that ``configure_callbacks`` replaces a callback: the schedules' own
      callback, added once (:mod:`luong_lit.training.lr_steps`).

    W&B's own lines are its settings' business
    (:class:`~luong_lit.training.loggers.ResumableWandbLogger`).
    """
    for pattern in DROPPED_WARNINGS + (RESUME_WARNINGS if resuming else ()):
        warnings.filterwarnings("ignore", message=pattern)
    for name in RANK_ZERO_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropRoutine) for f in logger.filters):
            logger.addFilter(_DropRoutine())


@contextmanager
def cuda_starting(device: torch.device | None) -> Iterator[None]:
    """Start CUDA (its driver and the device's context, a second or more) on a thread of its
    own while the body runs (a run's data read, its store built, its recaser learnt), and wait
    for it at the end. Nothing on a CPU, nor without a device (several ranks: each starts its
    own once launched, and a forked rank must find CUDA unstarted)."""
    if device is None or device.type != "cuda":
        yield
        return
    failed: list[BaseException] = []
    thread = threading.Thread(target=_start_cuda, args=(device, failed), name="cuda-start")
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if failed:  # the first use of the device would have raised it: raise it here instead
        raise failed[0]


def _start_cuda(device: torch.device, failed: list[BaseException]) -> None:
    """The device's primary context, made by its first tensor (shared by every thread)."""
    try:
        torch.empty(1, device=device)
    except BaseException as err:  # noqa: BLE001 - raised on the run's thread by cuda_starting
        failed.append(err)
