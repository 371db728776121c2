"""Choosing and stopping on a dev metric (``select_by``: perplexity, BLEU or chrF of the dev
set; :func:`~luong_lit.sweeps.resolvers.metric_mode`, a resolver of the configs, says whether
each is better higher or lower), the dev figures a callback may follow (:data:`MONITORABLE`), and
early stopping through Lightning's ``EarlyStopping`` (:class:`EarlyStopping`), off unless a
patience is given. ``best.ckpt`` (:class:`~luong_lit.training.best_checkpoint.BestCheckpoint`),
early stopping and the plateau schedules (:mod:`luong_lit.training.schedules`) follow the same
metric; a resumed run keeps the best score and the count of validations without improvement
(each callback's own state, in the checkpoint).
"""

from __future__ import annotations

import logging
from typing import Any

from lightning.pytorch.callbacks import EarlyStopping as LightningEarlyStopping
from lightning.pytorch.callbacks.early_stopping import EarlyStoppingReason
from lightning.pytorch.trainer.states import TrainerFn

from luong_lit.errors import ConfigError
from luong_lit.reports import check_current_name
from luong_lit.validate import integer, non_negative

log = logging.getLogger(__name__)

#: every dev figure a run logs that a checkpoint or early stopping may follow, in words (whether
#: it is better higher or lower: :func:`~luong_lit.sweeps.resolvers.metric_mode`)
MONITORABLE = {"val/ppl": "validation perplexity", "val/bleu": "validation BLEU (greedy)",
               "val/chrf": "validation chrF (greedy)", "val/nll_per_token": "validation NLL",
               "val/bleu_beam": "validation BLEU (beam)",
               "val/bleu_beam_unk": "validation BLEU (beam, unk replaced)"}  # fmt: skip


def check_monitor(option: str, monitor: str | None) -> None:
    """``monitor`` names a dev figure a run logs (None: none, where a callback allows it); an
    older name of one is refused with its new name
    (:func:`~luong_lit.reports.check_current_name`)."""
    check_current_name(option, monitor)
    if monitor is not None and monitor not in MONITORABLE:
        raise ConfigError(
            f"{option}={monitor} is not a figure a run logs: choose one of "
            f"{', '.join(MONITORABLE)} (select_by=ppl|bleu|chrf sets it for you)"
        )


def training_ended(trainer) -> bool:
    """Whether the run's training has ended before its budget: early stopping has stopped it, or
    its schedule has run its course (read when a run resumes from the checkpoint written at the
    validation that decided it, which then trains no more: ``LuongLitModule.on_train_start``)."""
    stopped = any(getattr(c, "stopped", False) for c in trainer.callbacks
                  if isinstance(c, EarlyStopping))  # fmt: skip
    done = any(getattr(c.scheduler, "finished", False) for c in trainer.lr_scheduler_configs)
    return stopped or done


class EarlyStopping(LightningEarlyStopping):
    """Lightning's ``EarlyStopping`` on the dev metric, off while ``patience`` is None: training
    stops after ``patience`` validations in a row without an improvement of at least
    ``min_delta``, with a line that says so (the metric, its best value and the step it was
    reached at, the patience). A run resumed after the validation that stopped it trains no
    more (the checkpoint keeps the reason)."""

    def __init__(self, monitor: str = "val/ppl", mode: str = "min", patience: int | None = None,
                 min_delta: float = 0.0) -> None:  # fmt: skip
        check_monitor("callbacks.early_stopping.monitor", monitor)
        integer("patience", patience, 1, nullable=True)
        non_negative("min_delta", min_delta)
        self.off = patience is None
        # checked after each validation (not at the epoch's end): the last.ckpt written after it
        # then keeps the count, and a resumed run stops where an unbroken one would
        super().__init__(monitor=monitor, mode=mode, patience=patience or 1, min_delta=min_delta,
                         check_finite=True, strict=not self.off,
                         check_on_train_epoch_end=False)  # fmt: skip
        self.best_step: int | None = None  # the optimizer step of the best score

    @property
    def stopped(self) -> bool:
        """Whether this callback has stopped the run (a resumed run reads it so)."""
        return not self.off and self.stopping_reason != EarlyStoppingReason.NOT_STOPPED

    def on_validation_end(self, trainer, pl_module) -> None:
        if self.off or trainer.sanity_checking or trainer.state.fn != TrainerFn.FITTING:
            return
        best, stopped = float(self.best_score), self.stopping_reason
        super().on_validation_end(trainer, pl_module)
        if float(self.best_score) != best:
            self.best_step = trainer.global_step
        if stopped != self.stopping_reason and trainer.is_global_zero:
            log.info("early stopping at step %d: %s", trainer.global_step, self._stop_words())

    def _stop_words(self) -> str:
        if self.stopping_reason == EarlyStoppingReason.NON_FINITE_METRIC:
            return f"{self.monitor} is not finite"
        at = "" if self.best_step is None else f" (step {self.best_step})"
        return (f"{self.monitor} has not improved on its best, {float(self.best_score):.4g}{at}, "
                f"by {self.min_delta} or more for {self.wait_count} validations "
                f"(patience {self.patience})")  # fmt: skip

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if not self.off:
            super().on_train_epoch_end(trainer, pl_module)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "best_step": self.best_step}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self.best_step = state_dict.get("best_step")
