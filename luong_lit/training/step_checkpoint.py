"""Checkpoints in the middle of an epoch: :class:`StepCheckpoint` writes
``checkpoints/last.ckpt`` every N optimizer steps, or else every M minutes
(``callbacks.checkpoint``; by default every 10 minutes), atomically like the epoch checkpoints.

The training batches follow the trainer's position
(:class:`~luong_lit.data.loading.loader.ResumableLoader`), so a run resumed from the middle of an
epoch continues with the batches that follow.
"""

from __future__ import annotations

import datetime

from lightning.pytorch.callbacks import ModelCheckpoint

from luong_lit.validate import integer, positive


class StepCheckpoint(ModelCheckpoint):
    """``last.ckpt`` every ``every_n_train_steps`` steps, or (when that is 0) every
    ``every_n_minutes`` minutes (None: off), for resuming in the middle of an epoch. Lightning's
    ``ModelCheckpoint`` takes one of the two: a step interval, when given, wins."""

    def __init__(
        self, dirpath: str, every_n_train_steps: int = 0, every_n_minutes: float | None = None
    ) -> None:
        integer("every_n_train_steps", every_n_train_steps, 0)
        positive("every_n_minutes", every_n_minutes, nullable=True)
        by_time = every_n_minutes and not every_n_train_steps
        interval = datetime.timedelta(minutes=every_n_minutes) if by_time else None
        super().__init__(
            dirpath=dirpath,
            filename="last",
            monitor=None,
            save_top_k=1,
            enable_version_counter=False,
            every_n_train_steps=every_n_train_steps or None,
            train_time_interval=interval,
            save_on_train_epoch_end=False,
        )
        self.active = bool(every_n_train_steps or every_n_minutes)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.active and not validation_follows(trainer, batch_idx):
            super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    def on_validation_end(self, trainer, pl_module) -> None:  # epoch ends: ``model_checkpoint``'s
        return


def validation_follows(trainer, batch_idx: int) -> bool:
    """Whether a validation runs right after training batch ``batch_idx`` (in the middle of the
    epoch with ``val_check_interval``, or at its end). A checkpoint written before it would be
    resumed past it, the validation never run; the one written after it (``save_last``) holds
    both. From the trainer's public settings."""
    epoch_validates = (trainer.current_epoch + 1) % (trainer.check_val_every_n_epoch or 1) == 0
    if not (trainer.enable_validation and epoch_validates):
        return False
    done, every = batch_idx + 1, trainer.val_check_batch
    mid = isinstance(every, int) and every > 0 and done % every == 0
    return mid or done >= trainer.num_training_batches


def epoch_checkpoints(dirpath: str, every_n_epochs: int = 0, keep_last: int | None = None,
                      filename: str = "e{epoch:02d}") -> ModelCheckpoint:  # fmt: skip
    """``checkpoints/epochs/eXX.ckpt`` at the end of every ``every_n_epochs``-th epoch (0: off),
    each one resumable, all of them kept, or the newest ``keep_last`` (fairseq's
    ``--keep-last-epochs``; alone, it keeps every epoch's): what ``python -m luong_lit
    average RUN --last N`` averages. Lightning's ``ModelCheckpoint``, the newest chosen by its
    ``epoch``."""
    integer("every_n_epochs", every_n_epochs, 0)
    integer("keep_last", keep_last, 1, nullable=True)
    every = every_n_epochs or (1 if keep_last else 0)
    newest = {"monitor": "epoch", "mode": "max", "save_top_k": keep_last} if keep_last else {}
    return ModelCheckpoint(
        dirpath=dirpath, filename=filename, every_n_epochs=every, auto_insert_metric_name=False,
        **({"save_top_k": -1} | newest),
    )  # fmt: skip
