"""The paper's learning-rate schedule, and one alternative, as scheduler objects for Lightning.

Each schedule is built from the config (its options checked then) and called with the optimizer
and the trainer's plan of the run (:class:`Plan`); it returns Lightning's scheduler description
(``{"scheduler": ..., "interval": ...}``), and Lightning steps it.
The multipliers are plain functions of the epoch or step, so a resumed run recomputes them
from its own plan (a run resumed with a larger ``trainer.max_epochs`` anneals over the new one).

* :class:`Halving`: "after 5 epochs, we begin to halve the learning rate every epoch" (§4.1);
* :class:`LinearDecay`: a constant rate, then linear to 0, step by step, over the last epochs
  (warmup-stable-decay without the warmup, Hägele et al. 2024);
* :class:`Plateau`: halve the rate whenever the dev metric stops improving (OpenNMT-py's and
  Joey NMT's ``plateau``): torch's ``ReduceLROnPlateau``;
* :class:`HalvingAfterPlateau`: the full rate while the dev metric improves, then the paper's
  halving at every validation, ``halvings`` times, and training stops (a budget that fits the
  corpus, whatever its size).
The plateau schedules count validations, as early stopping does: each is stepped with the dev
metric once per validation (:mod:`luong_lit.training.lr_steps`, before the validation's
checkpoint is written), never by Lightning at an epoch's end. Their state (best score,
validations without improvement, halvings done, whether the last one has trained) is in every
checkpoint, so a run resumed from any stop continues them exactly.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from torch.optim.lr_scheduler import LambdaLR, ReduceLROnPlateau

from luong_lit.errors import ConfigError
from luong_lit.validate import fraction, integer, non_negative, one_of, positive

CONVENTIONS = ("paper", "code")


class Plan:
    """How many optimizer steps the run will take, in all and per epoch, read from the trainer's
    public estimates when a schedule asks (only :class:`LinearDecay` does, after the first
    optimizer step: asked earlier, the trainer would load its training batches before a resumed
    run has restored its position)."""

    def __init__(self, trainer) -> None:
        self.trainer = trainer

    @property
    def total_steps(self) -> int:
        t = self.trainer
        no_epochs = not t.max_epochs or t.max_epochs < 1
        if no_epochs and not (t.max_steps and t.max_steps > 0):
            raise ConfigError("this learning-rate schedule needs trainer.max_epochs or max_steps")
        return int(t.estimated_stepping_batches)

    @property
    def steps_per_epoch(self) -> int:
        t = self.trainer  # read after total_steps, whose estimate counts the batches
        return max(1, math.ceil(t.num_training_batches / t.accumulate_grad_batches))


def halving_factor(epoch: int, after: int, convention: str = "paper") -> float:
    """LR multiplier for 0-based ``epoch``: halve every epoch after ``after`` epochs.

    ``paper``: epoch 6 runs at 0.5 after 5 epochs at the full rate (§4.1). ``code``: nmt.matlab
    first halves at the end of epoch 6, so epoch 7 runs at 0.5 (docs/paper_notes.md §8).
    """
    first_halved = after + (1 if convention == "code" else 0)  # 0-based epoch index
    return 0.5 ** max(0, epoch - first_halved + 1)


class Halving:
    """The paper's schedule, stepped by Lightning once per epoch.

    ``after``: epochs at the full rate (paper: 5, or 8 with dropout); ``convention``: ``paper``
    or ``code`` (:func:`halving_factor`).
    """

    def __init__(self, after: int = 5, convention: str = "paper") -> None:
        integer("after", after, 0)
        one_of("convention", convention, CONVENTIONS)
        self.after, self.convention = after, convention

    def __call__(self, optimizer, plan: Plan | None = None) -> dict[str, Any]:
        factor = partial(halving_factor, after=self.after, convention=self.convention)
        return {"scheduler": LambdaLR(optimizer, factor), "interval": "epoch"}


def anneal_factor(step: int, total_steps: int, anneal_steps: int) -> float:
    """LR multiplier for 0-based optimizer ``step``: 1, then linear down to 0 over the last
    ``anneal_steps`` of ``total_steps``. Step ``total_steps - anneal_steps`` is the last one at
    the full rate; the final step runs at ``1 / anneal_steps`` of it.
    """
    return min(1.0, (total_steps - step) / anneal_steps)


class LinearDecay:
    """A constant rate, then linear to 0 over the last ``epochs`` epochs, stepped by Lightning
    after every optimizer step (``interval: step``)."""

    def __init__(self, epochs: float = 2.0) -> None:
        positive("epochs", epochs)
        self.epochs = epochs

    def __call__(self, optimizer, plan: Plan) -> dict[str, Any]:
        known: list[tuple[int, int]] = []  # (total steps, annealed steps), once asked

        def factor(step: int) -> float:  # a function: LambdaLR keeps no state of it
            if step == 0:  # the full rate whatever the plan; the trainer has not started yet
                return 1.0
            if not known:
                total = plan.total_steps
                known.append((total, min(total, max(1, round(self.epochs * plan.steps_per_epoch)))))
            return anneal_factor(step, *known[0])

        return {"scheduler": LambdaLR(optimizer, factor), "interval": "step"}


MODES = ("min", "max")


def _plateau_options(monitor: str, mode: str, threshold: float) -> None:
    if not isinstance(monitor, str) or not monitor:
        raise ConfigError(f"model.scheduler.monitor must name a logged dev metric, got {monitor!r}")
    one_of("mode", mode, MODES)
    non_negative("threshold", threshold)


class Plateau:
    """Halve (``factor``) the rate when ``monitor`` has not improved for ``patience`` validations
    (torch's ``ReduceLROnPlateau``; Lightning passes it the logged metric), never below
    ``min_lr``."""

    def __init__(self, monitor: str = "val/ppl", mode: str = "min", factor: float = 0.5,
                 patience: int = 0, threshold: float = 0.0,
                 min_lr: float = 0.0) -> None:  # fmt: skip
        _plateau_options(monitor, mode, threshold)
        fraction("factor", factor)
        integer("patience", patience, 0)
        non_negative("min_lr", min_lr)
        self.monitor, self.mode, self.factor, self.patience = monitor, mode, factor, patience
        self.threshold, self.min_lr = threshold, min_lr

    def __call__(self, optimizer, plan: Plan | None = None) -> dict[str, Any]:
        scheduler = ReduceOnValidation(optimizer, mode=self.mode, factor=self.factor,
                                       patience=self.patience, threshold=self.threshold,
                                       threshold_mode="rel", min_lr=self.min_lr)  # fmt: skip
        return on_validation(scheduler, self.monitor)


def on_validation(scheduler, monitor: str) -> dict[str, Any]:
    """Lightning's description of a scheduler stepped once per validation with ``monitor``
    (:class:`~luong_lit.training.lr_steps.ScheduleSteps`): not a plateau scheduler
    to Lightning, which would step it at an epoch's end (and not at all when a run resumes from
    an epoch's last checkpoint); the module leaves its per-epoch call alone
    (``LuongLitModule.lr_scheduler_step``)."""
    scheduler.monitor = monitor
    return {"scheduler": scheduler, "interval": "epoch", "reduce_on_plateau": False}


class ReduceOnValidation(ReduceLROnPlateau):
    """torch's ``ReduceLROnPlateau``, stepped with the dev metric after every validation
    (:func:`on_validation`): ``patience`` counts validations."""

    after_validation = True
    monitor = "val/ppl"
    finished = False  # a plateau schedule never ends the run; early stopping does


class HalvingOnceStalled(ReduceOnValidation):
    """The full rate until the first validation (after ``after`` of them) that does not improve on
    the best; from then on, half the rate at every validation, whatever the metric.
    :attr:`halved`: the halvings so far; :attr:`finished`: ``halvings`` of them are done, and
    the validation that found it so has come (the training since ran at the last rate): the run
    stops there (:mod:`luong_lit.training.lr_steps`)."""

    def __init__(self, optimizer, halvings: int, after: int, mode: str, threshold: float) -> None:
        super().__init__(optimizer, mode=mode, factor=0.5, patience=0, threshold=threshold,
                         threshold_mode="rel")  # fmt: skip
        self.halvings, self.after, self.halved = halvings, after, 0
        self.finished = False

    def step(self, metrics, epoch=None) -> None:  # noqa: D102 - see the class doc
        if self.halved >= self.halvings:  # the last rate has trained: this validation ends it
            self.finished = True
            return
        self.last_epoch += 1
        current = float(metrics)
        improved = self.improves(current)
        if self.halved or (self.last_epoch > self.after and not improved):
            for group in self.optimizer.param_groups:
                group["lr"] = group["lr"] * 0.5
            self.halved += 1
        if improved:
            self.best = current
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def improves(self, current: float) -> bool:
        """Whether ``current`` beats the best by more than ``threshold`` (relative)."""
        if self.mode == "min":
            return current < self.best * (1.0 - self.threshold)
        return current > self.best * (1.0 + self.threshold)


class HalvingAfterPlateau:
    """The full rate while ``monitor`` improves (and for at least ``after`` validations); from the
    first validation that does not improve, the paper's halving at every validation (§4.1: every
    epoch, where validation runs once an epoch), ``halvings`` times; training stops at the
    validation after the last rate has trained, or at ``trainer.max_epochs``."""

    def __init__(self, halvings: int = 5, after: int = 0, monitor: str = "val/ppl",
                 mode: str = "min", threshold: float = 0.0) -> None:  # fmt: skip
        integer("halvings", halvings, 1)
        integer("after", after, 0)
        _plateau_options(monitor, mode, threshold)
        self.halvings, self.after, self.monitor = halvings, after, monitor
        self.mode, self.threshold = mode, threshold

    def __call__(self, optimizer, plan: Plan | None = None) -> dict[str, Any]:
        scheduler = HalvingOnceStalled(optimizer, self.halvings, self.after, self.mode,
                                       self.threshold)  # fmt: skip
        return on_validation(scheduler, self.monitor)
