"""How a run writes its checkpoints: atomically, and on a GPU off the training thread.

Every checkpoint is written to a temporary file in the same directory and renamed over the
target (:func:`luong_lit.checkpoint.atomic_save`): a crash mid-write leaves the previous
checkpoint intact. ``checkpoint_writes=background`` writes, fsyncs and renames in one thread of
its own while training goes on, as Lightning's ``AsyncCheckpointIO`` does; unlike it, every
tensor is first copied to host memory on the training thread (the next step changes the
weights and moments the checkpoint holds; a copy made there is of the step saved, on any
device and stream), and the writes run one at a time in the order asked, at most
:data:`QUEUED` waiting. Removing a checkpoint (``keep_last``, a superseded ``best.ckpt``) and
the end of the fit or of the test wait for the writes asked before
(:meth:`AtomicCheckpointIO.wait`);
a stop's checkpoint is written inline (:func:`inline_writes`). A write that failed (a full
disk) raises its one-line :class:`~luong_lit.checkpoint.CheckpointError` at the next save or
wait. ``inline`` writes on the
training thread; ``auto`` (the default) writes in the background where the weights are on a
GPU and inline on a CPU, where the writer shares the cores and the interpreter with training
and showed no gain (``scripts/benchmarks/epoch_extras.py``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO
from lightning_utilities.core.apply_func import apply_to_collection

from luong_lit.checkpoint import atomic_save
from luong_lit.training.lightning_internals import uploads_each_checkpoint

log = logging.getLogger(__name__)

WRITES = ("auto", "background", "inline")


def host_copy(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """``checkpoint`` with every tensor copied to host memory (detached), tensors that are one
    (a tied output layer's weight and the embedding) still one copy."""
    copies: dict[tuple, torch.Tensor] = {}

    def copy(t: torch.Tensor) -> torch.Tensor:
        key = (t.device, t.untyped_storage().data_ptr(), t.storage_offset(), t.shape, t.stride(),
               t.dtype)  # fmt: skip
        if key not in copies:
            copies[key] = t.detach().to("cpu", copy=True)
        return copies[key]

    return apply_to_collection(checkpoint, torch.Tensor, copy)


#: background writes asked and not yet on disk, at most (each a host copy of a checkpoint)
QUEUED = 2


class AtomicCheckpointIO(TorchCheckpointIO):
    """Atomic checkpoint writes, in a thread of their own as ``writes`` says (:data:`WRITES`)."""

    def __init__(self, writes: str = "auto") -> None:
        assert writes in WRITES, writes
        self.writes = writes
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future] = []

    def __getstate__(self) -> dict[str, Any]:  # sent to spawned ranks: no thread, no writes
        return {**self.__dict__, "_pool": None, "_pending": []}

    def in_background(self, checkpoint: dict[str, Any]) -> bool:
        """Whether ``checkpoint`` is written off the training thread (``auto``: its weights
        are on a GPU)."""
        if self.writes != "auto":
            return self.writes == "background"
        weights = checkpoint.get("state_dict", {}).values()
        return any(isinstance(t, torch.Tensor) and t.is_cuda for t in weights)

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        """Write ``checkpoint`` to ``path``; a background write that failed before raises here,
        on the training thread, as an inline write's failure would have one save earlier."""
        if not self.in_background(checkpoint):
            self.wait()  # after any written before it
            atomic_save(checkpoint, path)
            return
        self._settle(keep=QUEUED - 1)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="luong_lit-checkpoint")
        self._pending.append(self._pool.submit(atomic_save, host_copy(checkpoint), path))

    def _settle(self, keep: int) -> None:
        """Wait until at most ``keep`` writes are pending; the first failed one raises, once
        every write waited for has ended."""
        failed = None
        while len(self._pending) > keep or (self._pending and self._pending[0].done()):
            error = self._pending.pop(0).exception()
            failed = failed or error
        if failed is not None:
            raise failed

    def wait(self) -> None:
        """Until every write asked so far is on disk; a failed one raises its error."""
        self._settle(keep=0)

    def remove_checkpoint(self, path) -> None:
        self.wait()  # not a file still being written, nor one written after its removal
        super().remove_checkpoint(path)

    def teardown(self) -> None:
        """The end of a fit or test (Lightning's, also when it stops on an exception): every
        write on disk. A failed one raises; while another error ends the run, it is said in
        one line instead, and that error is the one the run ends with."""
        ending_on_error = sys.exc_info()[0] is not None  # Lightning handling an exception
        try:
            self.wait()
        except Exception as err:  # noqa: BLE001 - a failed write
            if not ending_on_error:
                raise
            log.error("%s", err)
        finally:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None


def write_checkpoints(trainer, writes: Any) -> None:
    """Have ``trainer`` write its checkpoints as ``writes`` (``checkpoint_writes``, one of
    :data:`WRITES`: checked with the run's options) says; inline where a logger uploads each
    checkpoint as it is saved (``logger.wandb.log_model=all``), which reads the file then."""
    io = trainer.strategy.checkpoint_io
    if not isinstance(io, AtomicCheckpointIO):
        return
    if writes != "inline" and any(uploads_each_checkpoint(lg) for lg in trainer.loggers):
        if writes == "background":
            log.info("checkpoint_writes=background: written inline, since a logger uploads "
                     "each checkpoint as it is saved (log_model=all)")  # fmt: skip
        writes = "inline"
    io.writes = writes


@contextmanager
def inline_writes(trainer) -> Iterator[None]:
    """Checkpoints written on the training thread while inside, after those asked before: a
    stop's ``last.ckpt`` is on disk before Lightning's barrier lets the other ranks exit."""
    io = getattr(getattr(trainer, "strategy", None), "checkpoint_io", None)
    if not isinstance(io, AtomicCheckpointIO):
        yield
        return
    writes, io.writes = io.writes, "inline"
    try:
        yield
    finally:
        io.writes = writes
