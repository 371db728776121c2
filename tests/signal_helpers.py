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
