"""``best.ckpt`` by a dev metric and ``last.ckpt`` always the last finished state:
:class:`BestCheckpoint`, the run's ``callbacks.model_checkpoint``.

Lightning's ``ModelCheckpoint(save_last=True)`` writes ``last.ckpt`` only in a step where it also
writes a top-k checkpoint, so after a validation that does not improve ``last.ckpt`` stays at the
last one that did: a run killed then resumes from an earlier epoch and trains finished work
again, and ``last.ckpt`` after training is not the final model. :class:`BestCheckpoint` keeps
Lightning's top-k logic for ``best.ckpt`` and writes ``last.ckpt`` itself, through the trainer's
public ``save_checkpoint``: after every validation (once the top-k checkpoint has been decided,
so that the best score it keeps is current), at the end of each training epoch that no validation
follows, and when training ends.
"""

from __future__ import annotations

from pathlib import Path

from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.trainer.states import TrainerFn

from luong_lit.training.lightning_internals import reopen_epoch
from luong_lit.training.stopping import check_monitor


class BestCheckpoint(ModelCheckpoint):
    """Lightning's ``ModelCheckpoint`` for the top-k checkpoints, with ``save_last`` meaning
    "``last.ckpt`` holds the last finished step after every validation, every epoch and at the
    end of training", whatever the monitored metric did (see the module doc)."""

    def __init__(self, *args, save_last: bool = True, **kwargs) -> None:
        check_monitor("callbacks.model_checkpoint.monitor", kwargs.get("monitor"))
        # the top-k decision right after each validation (Lightning would defer it to the end of
        # the epoch where validation ends one): last.ckpt, written next, keeps its result
        kwargs.setdefault("save_on_train_epoch_end", False)
        super().__init__(*args, save_last=False, **kwargs)
        self.keep_last = bool(save_last)
        self._last_step = -1  # the global step last.ckpt holds, as written by this callback
        self._reopen = False  # the last.ckpt being written ends training inside an epoch

    @property
    def state_key(self) -> str:
        """Lightning's key for ``ModelCheckpoint`` with these settings: checkpoints written
        before this class existed resume with their best score."""
        return super().state_key.replace(type(self).__qualname__, "ModelCheckpoint", 1)

    @property
    def last_path(self) -> Path:
        return Path(self.dirpath or ".") / f"{self.CHECKPOINT_NAME_LAST}{self.FILE_EXTENSION}"

    def _write_last(self, trainer, again: bool = False) -> None:
        """``last.ckpt`` of this step, unless written already (``again``: even then, as after a
        validation, whose result the checkpoint must keep)."""
        if not self.keep_last or trainer.sanity_checking or trainer.fast_dev_run:
            return
        if trainer.state.fn != TrainerFn.FITTING or (
            self._last_step == trainer.global_step and not again
        ):
            return
        self.last_model_path = str(self.last_path)  # part of the state it saves
        trainer.save_checkpoint(self.last_path, weights_only=False)
        self._last_step = trainer.global_step

    def load_state_dict(self, state_dict) -> None:
        """Lightning's, and the last improving score too: a resumed run's checkpoints then keep
        the state an unbroken run's do."""
        super().load_state_dict(state_dict)
        if state_dict.get("dirpath", self.dirpath) == self.dirpath:
            self.current_score = state_dict.get("current_score", self.current_score)

    def on_train_start(self, trainer, pl_module) -> None:
        super().on_train_start(trainer, pl_module)
        if trainer.ckpt_path:  # resumed: last.ckpt holds the step the run starts from
            self._last_step = trainer.global_step

    def on_validation_end(self, trainer, pl_module) -> None:
        super().on_validation_end(trainer, pl_module)
        self._write_last(trainer, again=True)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        super().on_train_epoch_end(trainer, pl_module)
        if not _validates_at_epoch_end(trainer):
            self._write_last(trainer)

    def on_train_end(self, trainer, pl_module) -> None:
        super().on_train_end(trainer, pl_module)
        self._reopen = stopped_within_epoch(trainer)  # by max_steps: the epoch goes on later
        try:
            self._write_last(trainer)
        finally:
            self._reopen = False

    def on_save_checkpoint(self, trainer, pl_module, checkpoint) -> None:
        if self._reopen:
            reopen_epoch(checkpoint)


def stopped_within_epoch(trainer) -> bool:
    """Whether training ended at ``trainer.max_steps`` before its epoch's last batch (a resume
    with a larger ``max_steps`` then trains the rest of that epoch:
    :func:`~luong_lit.training.lightning_internals.reopen_epoch`)."""
    done = trainer.fit_loop.epoch_loop.batch_progress.current.completed
    steps = trainer.max_steps
    return 0 <= steps <= trainer.global_step and done < trainer.num_training_batches


def _validates_at_epoch_end(trainer) -> bool:
    """Whether this epoch's last batch is followed by a validation (it then writes ``last.ckpt``
    after it, so the epoch end does not)."""
    from luong_lit.training.step_checkpoint import validation_follows

    return validation_follows(trainer, trainer.num_training_batches - 1)
