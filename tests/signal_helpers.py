"""A callback the resume tests add to a training run (``+callbacks.stop._target_=...``)."""

from __future__ import annotations

import os
import signal

import lightning as L


class SigtermInValidation(L.Callback):
    """Send this process SIGTERM after validation batch ``batch`` of epoch ``epoch``."""

    def __init__(self, epoch: int = 1, batch: int = 1) -> None:
        self.epoch, self.batch = epoch, batch

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *_) -> None:
        if trainer.sanity_checking or trainer.current_epoch != self.epoch:
            return
        if batch_idx == self.batch:
            os.kill(os.getpid(), signal.SIGTERM)
