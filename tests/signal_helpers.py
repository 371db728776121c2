"""Callbacks the resume tests add to a training run (``+callbacks.stop._target_=...``)."""

from __future__ import annotations

import os
import signal
import time

import lightning as L


class SigtermInValidation(L.Callback):
    """Send this process SIGTERM after validation batch ``batch`` of epoch ``epoch``, in a run
    that is not itself resumed (the resumed run keeps the run's overrides, this one too)."""

    def __init__(self, epoch: int = 1, batch: int = 1) -> None:
        self.epoch, self.batch = epoch, batch

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *_) -> None:
        if trainer.sanity_checking or trainer.current_epoch != self.epoch or trainer.ckpt_path:
            return
        if batch_idx == self.batch:
            os.kill(os.getpid(), signal.SIGTERM)


class SlowSteps(L.Callback):
    """Sleep ``seconds`` after every training step: a short run that a test can stop in its
    middle from outside (the steps' results are those of a run without it)."""

    def __init__(self, seconds: float = 0.05) -> None:
        self.seconds = seconds

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        time.sleep(self.seconds)


class Snapshot(L.Callback):
    """Copy the run folder ``run_dir`` into ``to/MOMENT`` at each of a run's moments, as a
    ``kill -9`` would leave it there: ``mid_epoch`` (as optimizer step ``mid_step`` + 1 begins,
    step ``mid_step``'s checkpoint written), ``epoch_end`` (epoch ``epoch``'s validation and
    its checkpoint done, the epoch's end hooks not yet run), ``validation`` (after the first
    batch of epoch ``epoch``'s first validation) and ``test`` (after the final test's
    first batch); with ``checkpoint_writes=background``, once the moment's checkpoint is on
    disk. A resumed run (``trainer.ckpt_path``) takes none."""

    def __init__(self, run_dir: str, to: str, mid_step: int = 3, epoch: int = 1) -> None:
        self.run_dir, self.to, self.mid_step, self.epoch = run_dir, to, mid_step, epoch
        self.resumed = False

    def on_fit_start(self, trainer, pl_module) -> None:
        self.resumed = bool(trainer.ckpt_path)

    def _take(self, trainer, moment: str) -> None:
        import shutil
        from pathlib import Path

        where = Path(self.to) / moment
        if self.resumed or where.exists() or not trainer.is_global_zero:
            return
        io = trainer.strategy.checkpoint_io
        if hasattr(io, "wait"):  # checkpoints written in the background: the moment's is on disk
            io.wait()
        shutil.copytree(self.run_dir, where)  # Lightning saves the logs as it logs them

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step == self.mid_step:
            self._take(trainer, "mid_epoch")

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if trainer.current_epoch == self.epoch:
            self._take(trainer, "epoch_end")

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *_) -> None:
        if not trainer.sanity_checking and trainer.current_epoch == self.epoch:
            self._take(trainer, "validation")

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *_) -> None:
        self._take(trainer, "test")
