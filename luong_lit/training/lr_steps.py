"""The learning-rate schedules a run follows, seen from the outside: :class:`ScheduleSteps`
steps the dev-metric schedules (``plateau``, ``halving_after_plateau``) once per validation,
ends the run when one has run its course, and says in one line when the rate is lowered.

Lightning would step a plateau scheduler at an epoch's end (so ``patience`` would count epochs
where validation runs several times an epoch) and not at all when a run restarts from the
checkpoint an epoch's validation wrote; stepped here, in the validation's ``on_validation_end``,
before Lightning's checkpoint callbacks (always the last) write that validation's checkpoint,
every checkpoint holds the schedule as of its last validation, and a resumed run continues it.
"""

from __future__ import annotations

import logging

import lightning as L

log = logging.getLogger(__name__)


def _lr(scheduler) -> float:
    return float(scheduler.optimizer.param_groups[0]["lr"])


def stepped_on_validation(trainer) -> list:
    """The run's schedulers stepped with the dev metric after each validation."""
    return [
        c.scheduler for c in trainer.lr_scheduler_configs
        if getattr(c.scheduler, "after_validation", False)
    ]  # fmt: skip


class ScheduleSteps(L.Callback):
    """Steps the dev-metric schedules after every validation, stops the run once one has
    finished (:class:`~luong_lit.training.schedules.HalvingAfterPlateau`), and logs a line
    whenever the rate is lowered (every time for the schedules stepped by epoch or validation;
    once, where it starts, for one that lowers it at every step)."""

    def __init__(self) -> None:
        self._seen: float | None = None  # the rate of the last training step
        self._decaying = False  # a per-step decay has been announced

    def on_train_start(self, trainer, pl_module) -> None:
        self._seen = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        configs = trainer.lr_scheduler_configs
        if not configs:
            return
        lr = _lr(configs[0].scheduler)
        per_step = any(c.interval == "step" for c in configs)
        if self._seen is not None and lr < self._seen and trainer.is_global_zero:
            if not per_step:
                log.info("learning rate %g -> %g from step %d (epoch %d)", self._seen, lr,
                         trainer.global_step, trainer.current_epoch)  # fmt: skip
            elif not self._decaying:
                log.info("learning rate: the decay begins at step %d (%g -> %g), down to 0 at "
                         "the last step", trainer.global_step, self._seen, lr)  # fmt: skip
                self._decaying = True
        self._seen = lr

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking:
            return
        for scheduler in stepped_on_validation(trainer):
            value = trainer.callback_metrics.get(scheduler.monitor)
            if value is None:
                log.warning("%s was not measured at this validation (step %d): the learning-"
                            "rate schedule waits for one that measures it", scheduler.monitor,
                            trainer.global_step)  # fmt: skip
                continue
            before = _lr(scheduler)
            scheduler.step(float(value))
            self._say(trainer, scheduler, before, float(value))

    def _say(self, trainer, scheduler, before: float, value: float) -> None:
        if scheduler.finished:
            trainer.should_stop = True
            if trainer.is_global_zero:
                log.info("learning-rate schedule done (%d halvings, the last rate %g trained): "
                         "training stops at step %d", scheduler.halvings, before,
                         trainer.global_step)  # fmt: skip
            return
        after = _lr(scheduler)
        if after < before and trainer.is_global_zero:
            log.info("learning rate %g -> %g at step %d: %s %.4g, the best %.4g",
                     before, after, trainer.global_step, scheduler.monitor, value,
                     scheduler.best)  # fmt: skip
            self._seen = after
