"""What a run shows of its training while it trains (``callbacks.progress``).

At a terminal: a progress bar (tqdm, with or without ``rich`` installed), redrawn every
``read_every_n_steps`` steps (added by the trainer's builder,
:func:`luong_lit.training.instantiate.trainer_of`). Written to a file (``> train.log``, nohup,
a SLURM job), or with ``trainer.enable_progress_bar=false``: no bar, but a line every
``every_n_seconds`` seconds and/or every ``every_n_steps`` steps (:class:`ProgressLog`) with the
step and the steps of the whole run (``trainer.max_steps`` or ``trainer.max_epochs``, whichever
ends it first), the epoch, the mean training loss since the last line (its unit named: per
sentence or per target token, as ``model.loss_norm`` divides it), target tokens per second, the
time since the run began (a resumed run counts its earlier tries) and the time left; after each
validation, its figures; and while the dev or test sets are decoded (greedy or beam BLEU), a line
as often, with the sentences done (:func:`decode_progress`). The bar (:class:`RunProgressBar`)
counts the run's steps, as the lines do, not one epoch's batches.

The loss stays on the device between lines (summed there) and is read at most every
``read_every_n_steps`` steps, the bar's too: on a GPU every read waits for the device.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import TQDMProgressBar
from lightning.pytorch.callbacks.progress.progress_bar import get_standard_metrics

from luong_lit.runtime import log_like_the_run
from luong_lit.validate import integer, positive

log = logging.getLogger(__name__)


def is_terminal() -> bool:
    """Whether standard output and standard error are both terminals (a bar can be drawn)."""
    return all(getattr(s, "isatty", lambda: False)() for s in (sys.stdout, sys.stderr))


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class ProgressLog(L.Callback):
    """A progress line every ``every_n_seconds`` seconds (None: off) and/or every
    ``every_n_steps`` steps (0: off) while no progress bar is drawn (see the module doc)."""

    def __init__(
        self,
        every_n_seconds: float | None = 30,
        every_n_steps: int = 0,
        read_every_n_steps: int = 10,
    ) -> None:
        positive("every_n_seconds", every_n_seconds, nullable=True)
        integer("every_n_steps", every_n_steps, 0)
        integer("read_every_n_steps", read_every_n_steps, 1)
        self.every_n_seconds, self.every_n_steps = every_n_seconds, every_n_steps
        self.read_every = read_every_n_steps
        self.active = False

    _before = 0.0  # seconds trained by earlier tries of this run (from the checkpoint)
    _start: float | None = None  # when this try began training

    def state_dict(self) -> dict[str, float]:
        started = self._start
        return {"elapsed": self._before + (time.monotonic() - started if started else 0.0)}

    def load_state_dict(self, state_dict: dict[str, float]) -> None:
        self._before = float(state_dict.get("elapsed", 0.0))

    def setup(self, trainer, pl_module, stage: str) -> None:
        if trainer.is_global_zero:  # a spawned rank logs as the run does
            log_like_the_run(Path(trainer.default_root_dir))

    def on_train_start(self, trainer, pl_module) -> None:
        self.active = trainer.progress_bar_callback is None and trainer.is_global_zero
        self._unit = LOSS_UNITS.get(getattr(pl_module, "loss_norm", ""), "")
        self._start = time.monotonic()
        self._first_step = trainer.global_step
        self._total = trainer.estimated_stepping_batches  # max_steps or max_epochs: the first
        self._batches = 0
        self._window(self._start, trainer.global_step)

    def _window(self, now: float, step: int) -> None:
        """Start the figures of the next line."""
        self._last, self._last_step = now, step
        self._loss: torch.Tensor | None = None  # summed on the device
        self._losses, self._tokens = 0, 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        if not self.active:
            return
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if isinstance(loss, torch.Tensor):  # no host read: a sum on the device
            loss = loss.detach().float()
            self._loss = loss if self._loss is None else self._loss + loss
            self._losses += 1
        self._tokens += getattr(batch, "num_tgt_tokens", 0)  # counted on the host
        self._batches += 1
        if self._batches % self.read_every:
            return
        now, step = time.monotonic(), trainer.global_step
        by_steps = self.every_n_steps and (
            step // self.every_n_steps > self._last_step // self.every_n_steps
        )
        by_time = self.every_n_seconds and now - self._last >= self.every_n_seconds
        if by_steps or by_time:
            log.info(self.line(trainer, now))
            self._window(now, step)

    def line(self, trainer, now: float) -> str:
        """``step 1,200/14,500 | epoch 3/10 | loss 3.412 | 5,230 tok/s | elapsed 0:12:31 |
        ETA 1:05:10``: the loss and the tokens since the last line, the time left at this
        run's pace so far (its validations included)."""
        step, total, epochs = trainer.global_step, self._total, trainer.max_epochs
        parts = [f"step {step:,}" + (f"/{int(total):,}" if math.isfinite(total) else "")]
        parts.append(f"epoch {trainer.current_epoch + 1}" + (f"/{epochs}" if epochs else ""))
        if self._loss is not None and self._losses:
            mean = float(self._loss) / self._losses * trainer.accumulate_grad_batches
            parts.append(f"loss{self._unit} {mean:.4f}")
        parts.append(f"{self._tokens / max(now - self._last, 1e-9):,.0f} tok/s")
        session, done = now - self._start, step - self._first_step
        parts.append(f"elapsed {_clock(self._before + session)}")
        if done > 0 and math.isfinite(total):
            parts.append(f"ETA {_clock(max(total - step, 0) * session / done)}")
        return " | ".join(parts)

    def on_validation_end(self, trainer, pl_module) -> None:
        if not self.active or trainer.sanity_checking:
            return
        found = {k: v for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
        figures = ", ".join(f"{k} {float(v):.4g}" for k, v in sorted(found.items()))
        epoch, step = trainer.current_epoch + 1, trainer.global_step
        log.info(f"epoch {epoch} validated at step {step:,}: {figures or 'no figures'}")


#: how ``model.loss_norm`` divides the summed NLL, as the progress lines name the loss
LOSS_UNITS = {"sentences": "/sentence", "nominal": "/sentence", "tokens": "/token"}


class Heartbeat:
    """Called with the sentences each decoded batch held: a line every ``every`` seconds while
    ``what`` is decoded, and a stop at the next batch once a signal has come
    (:func:`~luong_lit.training.signals.signalled`: alone, Lightning's ``SIGTERMException``; a
    rank of several skips the rest of its share, and the ranks agree after the gather)."""

    def __init__(self, trainer, what: str, total: int, every: float | None) -> None:
        self.trainer, self.what, self.total, self.every = trainer, what, total, every
        self.done, self.start = 0, time.monotonic()
        self.last = self.start
        if every:
            log.info(f"{what}: {total:,} sentences")

    def __call__(self, n: int) -> None:
        from lightning.pytorch.utilities.exceptions import SIGTERMException

        from luong_lit.training.signals import SkipDecoding, signalled

        if signalled(self.trainer):  # alone: stop now; a rank: skip its share, then agree
            raise SIGTERMException if self.trainer.world_size == 1 else SkipDecoding
        self.done, now = self.done + n, time.monotonic()
        if self.every and now - self.last >= self.every:
            self.last = now
            took = _clock(now - self.start)
            log.info(f"{self.what}: {self.done:,}/{self.total:,} sentences, {took}")


def decode_progress(trainer, what: str, total: int) -> Heartbeat:
    """The ``progress`` a callback that decodes ``total`` sentences hands to the decoder: lines
    as often as :class:`ProgressLog`'s (none under a progress bar, or off rank 0)."""
    found = next((c for c in trainer.callbacks if isinstance(c, ProgressLog)), None)
    lines = found is not None and trainer.progress_bar_callback is None and trainer.is_global_zero
    return Heartbeat(trainer, what, total, found.every_n_seconds if lines else None)


class RunProgressBar(TQDMProgressBar):
    """Lightning's tqdm bar counting the run's optimizer steps (``trainer.max_steps`` or
    ``max_epochs``, whichever ends it first), as the progress lines do, with ``epoch e/E`` as
    its description; Lightning's own counts one epoch's batches from 0."""

    def on_train_epoch_start(self, trainer, *_) -> None:
        bar, total = self.train_progress_bar, trainer.estimated_stepping_batches
        if bar.total is None or bar.n == 0:  # the run's first epoch here: start at its step
            bar.reset(total=int(total) if math.isfinite(total) else None)
            bar.n = bar.initial = trainer.global_step
        epochs = f"/{trainer.max_epochs}" if trainer.max_epochs and trainer.max_epochs > 0 else ""
        bar.set_description(f"epoch {trainer.current_epoch + 1}{epochs}")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        bar, step = self.train_progress_bar, trainer.global_step
        if bar.disable or not (step % self.refresh_rate == 0 or step == bar.total):
            return
        bar.n = step
        bar.refresh()
        bar.set_postfix(self.get_metrics(trainer, pl_module))

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if not self.train_progress_bar.disable:
            self.train_progress_bar.set_postfix(self.get_metrics(trainer, pl_module))

    def get_metrics(self, trainer, pl_module) -> dict:
        """Lightning's figures, with the training loss read from the device here, as the bar is
        redrawn: the loss is logged off Lightning's bar, which reads its own after every step."""
        metrics = super().get_metrics(trainer, pl_module)
        loss = trainer.callback_metrics.get("train/loss")
        if loss is None:
            return metrics
        return {**get_standard_metrics(trainer), "train/loss": float(loss), **metrics}
