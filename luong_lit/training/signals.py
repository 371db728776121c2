"""A clean stop on a signal: on SIGTERM (preemption) or SIGINT (Ctrl-C) the current step
finishes, ``checkpoints/last.ckpt`` is written and training stops (:class:`SignalCheckpoint`);
``ckpt_path=last`` continues from there. A second Ctrl-C stops at once. A signal that lands
during an epoch's validation saves the epoch's training, and the resumed run validates that
epoch again from its first batch before training on
(:func:`~luong_lit.training.lightning_internals.rewind_validation`).

In a data-parallel run the ranks stop together whichever of them the signal reached (one
rank, some, or all, in different steps: SLURM's requeue signal on a multi-node job): a rank
that receives one only notes it, and after every training step the ranks agree, in one
all-reduce, whether any has; then every rank stops after that same step and they write one
checkpoint together. Lightning's own SIGTERM handler, which acts on the rank alone, is set aside
while training runs.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L

from luong_lit.training.lightning_internals import (
    request_stop,
    rewind_validation,
    submitit_requeue_signal,
)


def agreed_signal(trainer, pending: int | None) -> int:
    """The signal some rank has received (the largest number, where several have), 0 if none:
    an all-reduce every rank makes after every training step."""
    import torch
    import torch.distributed as dist

    found = torch.tensor([pending or 0], device=trainer.strategy.root_device)
    dist.all_reduce(found, op=dist.ReduceOp.MAX)
    return int(found.item())


def requeue_signal() -> int | None:
    """The signal by which submitit asks a job to stop before a timeout or a preemption
    (``SIGUSR2`` unless ``SUBMITIT_PREEMPT_SIGNAL`` says otherwise), in a submitit job only."""
    if not os.environ.get("SUBMITIT_EXECUTOR"):
        return None
    return submitit_requeue_signal()


class SignalCheckpoint(L.Callback):
    """On SIGTERM or SIGINT: finish the step, write ``last.ckpt``, stop (see the module doc).

    In a submitit job, submitit's requeue signal is taken the same way, and :attr:`handover`
    keeps submitit's own handler: called once ``last.ckpt`` is written, it requeues the job
    (submitit owns the requeue; Lightning's is switched off in :mod:`luong_lit.training.build`).
    """

    def __init__(self, dirpath: str) -> None:
        self.path = Path(dirpath) / "last.ckpt"
        self.signal: int | None = None  # the signal that stopped training, if one did
        self.pending: int | None = None  # a signal this rank received, not yet acted upon
        self.handover: Callable | None = None  # submitit's handler, when its signal stopped us
        self._previous: dict[int, Any] = {}
        self._saved = False
        self._in_validation = False  # the signal stopped an epoch's validation

    def on_train_start(self, trainer, pl_module) -> None:
        self.signal, self.handover, self._saved, self._in_validation = None, None, False, False
        self.pending = None
        self._register(trainer)

    def on_test_start(self, trainer, pl_module) -> None:  # the final test stops as training does
        self._register(trainer)

    def on_test_end(self, trainer, pl_module) -> None:
        self._restore()

    def _register(self, trainer) -> None:
        taken = [signal.SIGINT, requeue_signal()]
        if trainer.world_size > 1:  # Lightning's handler stops this rank alone: ours agree
            taken.append(signal.SIGTERM)
        for signum in (s for s in taken if s is not None):
            try:
                self._previous[signum] = signal.signal(signum, self._on_signal(trainer))
            except ValueError:  # not the main thread: Lightning's SIGTERM handling only
                pass

    def _on_signal(self, trainer) -> Callable:
        def handler(signum, frame) -> None:
            self.pending = self.pending or signum
            if trainer.world_size == 1:  # no other rank to agree with: stop after this step
                self.signal = signum
                request_stop(trainer)
            previous = self._previous.get(signum)
            if signum == signal.SIGINT:
                signal.signal(signal.SIGINT, previous or signal.default_int_handler)
            elif signum == requeue_signal() and callable(previous):  # submitit requeues
                self.handover = previous

        return handler

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.world_size > 1 and not trainer.received_sigterm:
            agreed = agreed_signal(trainer, self.pending)
            if agreed:  # every rank, after this same step
                self.signal = agreed
                request_stop(trainer)
        if trainer.received_sigterm and not self._saved:
            self._save(trainer)
            if spawned(trainer):  # a SystemExit would end this rank as if it had finished
                raise StoppedBySignal(self.signal)

    def _save(self, trainer) -> None:
        self.signal = self.signal or signal.SIGTERM
        trainer.save_checkpoint(self.path, weights_only=False)  # all of it, to resume
        self._saved = True

    def on_train_end(self, trainer, pl_module) -> None:
        self._restore()

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        from lightning.pytorch.utilities.exceptions import SIGTERMException

        fitting = trainer.state.fn == "fit"  # a test's weights are best.ckpt's: never last.ckpt
        if isinstance(exception, SIGTERMException) and fitting and not self._saved:  # validation
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


class StoppedBySignal(Exception):
    """A spawned rank (``ddp_spawn``) stopped on a signal, its step saved: an exception that
    torch's process spawning reports to the parent (Lightning's ``SIGTERMException``, a
    ``SystemExit``, would end the rank as if it had finished, and leave the parent waiting)."""

    def __init__(self, signum: int | None) -> None:
        super().__init__(f"stopped by signal {signum or 15}")


def spawned(trainer) -> bool:
    """Whether ``trainer``'s ranks are processes spawned by its launcher (``ddp_spawn``)."""
    launcher = trainer.strategy.launcher
    return launcher is not None and type(launcher).__name__ == "_MultiProcessingLauncher"


class SpawnedRanks:
    """The parent of a ``ddp_spawn`` run (``trainer=ddp_sim``), which trains nothing itself: a
    SIGTERM it receives goes on to its ranks, which agree to stop (:class:`SignalCheckpoint`);
    a Ctrl-C reaches them from the terminal and is only noted here. :attr:`signal`: the signal
    the parent received, for the message it prints when its ranks have stopped."""

    def __init__(self, trainer) -> None:
        self.active = spawned(trainer)
        self.signal: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SpawnedRanks:
        if self.active:
            for signum in (signal.SIGTERM, signal.SIGINT):
                self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def _on_signal(self, signum, frame) -> None:
        import multiprocessing

        self.signal = self.signal or signum
        if signum == signal.SIGTERM:
            for child in multiprocessing.active_children():
                os.kill(child.pid, signal.SIGTERM)

    def __exit__(self, *exc) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)

    @staticmethod
    def stopped_by_signal(err: BaseException) -> bool:
        """Whether ``err`` is a rank's report that it stopped on a signal, its step saved."""
        return type(err).__name__ == "ProcessRaisedException" and "StoppedBySignal" in str(err)
