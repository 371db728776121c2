"""Nothing lost on a crash: checkpoints in the middle of an epoch, and a clean stop on a signal.

* The training batches follow the trainer's position
  (:class:`~luong_lit.data.loading.loader.ResumableLoader`), so a run resumed from the middle of an
  epoch continues with the batches that follow.
* :class:`StepCheckpoint`: ``checkpoints/last.ckpt`` every N optimizer steps and/or every M
  minutes (``callbacks.checkpoint``), written atomically like the epoch checkpoints.
* :class:`SignalCheckpoint`: on SIGTERM (preemption) or SIGINT (Ctrl-C) the current step
  finishes, ``checkpoints/last.ckpt`` is written and training stops; ``ckpt_path=last``
  continues from there. A second Ctrl-C stops at once. A signal that lands during an epoch's
  validation saves the epoch's training, and the resumed run validates that epoch again from
  its first batch before training on (:func:`rewind_validation`).
"""

from __future__ import annotations

import datetime
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint

from luong_lit.errors import ConfigError
from luong_lit.validate import integer, positive


class StepCheckpoint(ModelCheckpoint):
    """``last.ckpt`` every ``every_n_train_steps`` steps and/or every ``every_n_minutes`` minutes
    (0 or None: off), for resuming in the middle of an epoch."""

    def __init__(
        self, dirpath: str, every_n_train_steps: int = 0, every_n_minutes: float | None = None
    ) -> None:
        integer("every_n_train_steps", every_n_train_steps, 0)
        positive("every_n_minutes", every_n_minutes, nullable=True)
        interval = datetime.timedelta(minutes=every_n_minutes) if every_n_minutes else None
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


VAL_PROGRESS = "epoch_loop.val_loop.batch_progress"  # Lightning's key in checkpoint["loops"]


def rewind_validation(checkpoint: dict[str, Any]) -> None:
    """Make a checkpoint written during an epoch's validation validate that epoch again.

    As saved, the validation loop's progress counts the batches it finished, and a resumed
    Lightning run treats such a validation as done: the epoch would have no dev figure and no
    chance to become ``best.ckpt``. Progress that says one batch started and none finished is,
    for Lightning, a restart in the middle of an evaluation: the resumed run goes back and runs
    the epoch's validation, from its first batch, before the next epoch trains.
    """
    progress = checkpoint.get("loops", {}).get("fit_loop", {}).get(VAL_PROGRESS)
    if progress is None:  # a Lightning that keeps its loops otherwise: resume as saved
        return
    for part in ("total", "current"):
        progress[part].update(ready=1, started=1, processed=0, completed=0)
    progress["is_last_batch"] = False


def requeue_signal() -> int | None:
    """The signal by which submitit asks a job to stop before a timeout or a preemption
    (``SIGUSR2`` unless ``SUBMITIT_PREEMPT_SIGNAL`` says otherwise), in a submitit job only."""
    if not os.environ.get("SUBMITIT_EXECUTOR"):
        return None
    from submitit import JobEnvironment

    return int(JobEnvironment._usr_sig())


class SignalCheckpoint(L.Callback):
    """On SIGTERM or SIGINT: finish the step, write ``last.ckpt``, stop (see the module doc).

    In a submitit job, submitit's requeue signal is taken the same way, and :attr:`handover`
    keeps submitit's own handler: called once ``last.ckpt`` is written, it requeues the job
    (submitit owns the requeue; Lightning's is switched off in :mod:`luong_lit.training.build`).
    """

    def __init__(self, dirpath: str) -> None:
        self.path = Path(dirpath) / "last.ckpt"
        self.signal: int | None = None  # the signal that stopped training, if one did
        self.handover: Callable | None = None  # submitit's handler, when its signal stopped us
        self._previous: dict[int, Any] = {}
        self._saved = False
        self._in_validation = False  # the signal stopped an epoch's validation

    def on_train_start(self, trainer, pl_module) -> None:
        self.signal, self.handover, self._saved, self._in_validation = None, None, False, False
        requeue = requeue_signal()
        for signum in (signal.SIGINT, requeue) if requeue else (signal.SIGINT,):
            try:
                self._previous[signum] = signal.signal(signum, self._on_signal(trainer))
            except ValueError:  # not the main thread (a spawned DDP rank): SIGTERM only
                pass

    def _on_signal(self, trainer) -> Callable:
        def handler(signum, frame) -> None:
            self.signal = signum
            trainer._signal_connector.received_sigterm = True  # the trainer stops after this step
            previous = self._previous.get(signum)
            if signum == signal.SIGINT:
                signal.signal(signal.SIGINT, previous or signal.default_int_handler)
            elif callable(previous):
                self.handover = previous

        return handler

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.received_sigterm and not self._saved:
            self._save(trainer)

    def _save(self, trainer) -> None:
        self.signal = self.signal or signal.SIGTERM
        trainer.save_checkpoint(self.path, weights_only=False)  # all of it, to resume
        self._saved = True

    def on_train_end(self, trainer, pl_module) -> None:
        self._restore()

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        from lightning.pytorch.utilities.exceptions import SIGTERMException

        if isinstance(exception, SIGTERMException) and not self._saved:  # stopped during validation
            self._in_validation = trainer.validating and not trainer.sanity_checking
            self._save(trainer)
        self._restore()

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict[str, Any]) -> None:
        if self._in_validation:
            rewind_validation(checkpoint)

    def _restore(self) -> None:
        for signum, previous in self._previous.items():
            if previous is not None:
                signal.signal(signum, previous)
        self._previous = {}


def resumed_checkpoint(cfg, ckpt_path) -> Path | None:
    """The file ``ckpt_path`` names (``last``: the run's ``checkpoints/last.ckpt``), if any."""
    if not ckpt_path:
        return None
    if ckpt_path == "last":
        return Path(cfg.paths.output_dir) / "checkpoints" / "last.ckpt"
    return Path(ckpt_path) if ckpt_path not in ("best", "hpc", "registry") else None


def _described(value) -> str:
    if isinstance(value, dict) and "name" in value:
        opts = ", ".join(f"{k}={v}" for k, v in value.items() if k != "name")
        return value["name"] + (f" ({opts})" if opts else "")
    return str(value).lower() if isinstance(value, bool) else str(value)


def _as_override(key: str, value) -> str:
    if isinstance(value, dict) and "name" in value:  # an attention or a score: its group
        return f"{key}={value['name']}"
    return f"model.net.{key}={_described(value)}"


def _shapes(net) -> dict[str, tuple]:
    return {k: tuple(v.shape) for k, v in net.state_dict().items()}


def check_resumable(cfg, ckpt_path) -> None:
    """Refuse to resume a checkpoint into another model: say what it was trained with, what
    the command asks for, and how to resume it as it was (before any weight is loaded)."""
    import hydra
    import torch
    from omegaconf import OmegaConf

    from luong_lit.checkpoint import NOT_NET_ARGS, build_net, read_checkpoint

    path = resumed_checkpoint(cfg, ckpt_path)
    if path is None or not path.is_file():
        return
    meta = read_checkpoint(path, mmap=True)["luong_lit"]
    was, now = meta["net"], OmegaConf.to_container(cfg.model.net, resolve=True)
    with torch.device("meta"):  # the two models' weights, none allocated
        same = _shapes(build_net(was, 8, 8)) == _shapes(hydra.utils.instantiate(now)(8, 8))
    if same:
        return  # the same weights (another dropout, say): Lightning resumes it
    keys = sorted(
        k for k in set(was) | set(now) if k not in NOT_NET_ARGS and was.get(k) != now.get(k)
    )
    trained = ", ".join(f"{k}={_described(was.get(k))}" for k in keys)
    asked = ", ".join(f"{k}={_described(now.get(k))}" for k in keys)
    fix = meta.get("overrides") or [_as_override(k, was.get(k)) for k in keys if k in was]
    raise ConfigError(
        f"{path} was trained with {trained}, and this command asks for {asked}: its weights "
        f"would not fit. Resume it as it was: python -m luong_lit.train "
        f"hydra.run.dir={path.parent.parent} ckpt_path={ckpt_path} {' '.join(fix)}"
    )
