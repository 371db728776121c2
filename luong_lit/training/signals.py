"""A clean stop on a signal, at any moment of a run: on SIGTERM (preemption), SIGINT (Ctrl-C) or
submitit's requeue signal the current step (or batch) finishes, ``checkpoints/last.ckpt`` is
written, and the run ends with one line and the command that resumes it; ``ckpt_path=last``
continues from there. A second Ctrl-C stops at once.

The kit's handler (:class:`RunSignals`) is in charge for the whole run, from before the data is
read to after ``results.json`` is written; Lightning's own (which acts on one rank alone, and
runs a collective inside the handler) is left out (:func:`~luong_lit.training.lightning_internals.
leave_signals_to_the_kit`). Alone, a signal before training begins stops there (nothing was
trained yet); in the loops, at the next step or batch. A signal that lands during an epoch's
validation saves the epoch's training, and the resumed run validates that epoch again from its
first batch (:func:`~luong_lit.training.lightning_internals.rewind_validation`); one during the
final test ends the run with training complete, and the resume runs the test alone.

In a data-parallel run the ranks stop together whichever of them the signal reached, at any
moment (data setup, restore, training, validation, the test, their decoding), by the
agreement of :mod:`luong_lit.training.agreement`: a rank that receives one only notes it, the
ranks agree at points they all pass, and every rank then stops after that same step (or loop)
and they write one checkpoint together. The parent of ``ddp_spawn``'s ranks is
:mod:`luong_lit.training.spawned_ranks`'s.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L

from luong_lit.training import agreement
from luong_lit.training.checkpoint_io import inline_writes
from luong_lit.training.lightning_internals import (
    request_stop,
    rewind_validation,
    submitit_requeue_signal,
)
from luong_lit.training.spawned_ranks import StoppedBySignal, spawned


def requeue_signal() -> int | None:
    """The signal by which submitit asks a job to stop before a timeout or a preemption
    (``SIGUSR2`` unless ``SUBMITIT_PREEMPT_SIGNAL`` says otherwise), in a submitit job only."""
    if not os.environ.get("SUBMITIT_EXECUTOR"):
        return None
    return submitit_requeue_signal()


class StoppedOutsideLoops(Exception):
    """A signal came to a run of one process outside its trainer's loops: in its ``stage``
    (``setup``: its data set up, its checkpoint restored, nothing trained yet; ``test``: after
    training, before its test; ``finished``: after ``results.json``)."""

    def __init__(self, signum: int, stage: str) -> None:
        super().__init__(f"stopped by signal {signum} ({stage})")
        self.signum, self.stage = signum, stage


class RunSignals:
    """The run's handler of SIGTERM, SIGINT and submitit's requeue signal (see the module doc):
    :attr:`pending`, the first signal this process received; :attr:`handover`, submitit's own
    handler, called once the checkpoint is written (submitit requeues the job). ``alone``: a
    run of one process, which acts on a signal at once; the ranks of a data-parallel run only
    note it, and agree (:class:`SignalCheckpoint`)."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self.handover: Callable | None = None
        self.trainer = None  # the trainer in a loop (fit or test), else None
        self.alone = True
        self.stage = "setup"  # where the run is, outside the loops
        self.posted = False  # this rank has posted its signal for the others
        self._previous: dict[int, Any] = {}
        self._pid = os.getpid()  # the process whose handler this is (a fork's is not)

    @property
    def installed(self) -> bool:
        return bool(self._previous)

    def install(self, alone: bool = True) -> None:
        """Take the signals (the main thread only: elsewhere, nothing changes)."""
        from luong_lit import first_signals

        early = first_signals.received[:1]  # one that came as the process started
        self.pending, self.handover, self.trainer, self.alone = None, None, None, alone
        self.pending = early[0] if early else None
        self.posted, self.stage, self._pid = False, "setup", os.getpid()
        for signum in (s for s in (signal.SIGINT, signal.SIGTERM, requeue_signal()) if s):
            try:
                self._previous[signum] = signal.signal(signum, self._handler)
            except ValueError:  # not the main thread
                pass

    def uninstall(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous = {}

    def forked(self) -> None:
        """In a forked child (a pool's worker, a loader's): the default actions, at once,
        before any Python runs in it: a worker blocked in a lock dies of its pool's SIGTERM, as
        by default (:meth:`_handler` would act only once the worker ran Python again)."""
        for signum in self._previous:
            default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
            signal.signal(signum, default)
        self._previous = {}

    def _handler(self, signum, frame) -> None:
        if os.getpid() != self._pid:  # a forked worker (a pool's, a loader's): as by default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self.pending = self.pending or signum
        previous = self._previous.get(signum)
        if signum == signal.SIGINT:  # a second Ctrl-C stops at once
            signal.signal(signal.SIGINT, signal.default_int_handler)
        elif signum == requeue_signal() and callable(previous):  # submitit requeues
            self.handover = previous
        if not self.alone:
            return  # the ranks agree (SignalCheckpoint)
        if self.trainer is None:  # before the loops, or after: the run stops here
            if self.stage == "opening":  # its folder is being read: once it is open
                return
            if self.stage != "finished":
                raise StoppedOutsideLoops(signum, self.stage)
            return  # results.json is being written: said when the run ends
        request_stop(self.trainer)


SIGNALS = RunSignals()  #: this process's


os.register_at_fork(after_in_child=SIGNALS.forked)


class SkipDecoding(Exception):
    """The rest of a rank's decoding share is not decoded: the ranks are stopping."""


def signalled(trainer) -> bool:
    """Whether this rank's decoding should stop: alone, the trainer was asked to stop; in a
    data-parallel run, some rank has posted a signal (it then skips the rest of its share,
    and the ranks agree after the gather: :func:`agree_or_stop`)."""
    if trainer.world_size == 1:
        return bool(trainer.received_sigterm)
    _post_own()
    return bool(agreement.posted())


def _post_own() -> None:
    if SIGNALS.pending and not SIGNALS.posted:
        agreement.post(SIGNALS.pending)
        SIGNALS.posted = True


def agree_or_stop(trainer) -> None:
    """At a point every rank of a data-parallel run passes: the ranks agree whether any holds a
    signal, and if one does, all of them stop here (Lightning's ``SIGTERMException``)."""
    if trainer.world_size == 1:
        return
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    agreed = agreement.agreed_signal(trainer, max(SIGNALS.pending or 0, agreement.posted()))
    if agreed:
        stop = next((c for c in trainer.callbacks if isinstance(c, SignalCheckpoint)), None)
        if stop is not None:
            stop.signal, stop.agreed = agreed, True
        request_stop(trainer)
        raise SIGTERMException


class SignalCheckpoint(L.Callback):
    """On SIGTERM or SIGINT: finish the step, write ``last.ckpt``, stop (see the module doc).

    In a submitit job, submitit's requeue signal is taken the same way, and the kit keeps
    submitit's own handler (``RunSignals.handover``): called once ``last.ckpt`` is written, it
    requeues the job (submitit owns the requeue; Lightning's is switched off in
    :mod:`luong_lit.training.build`).
    """

    def __init__(self, dirpath: str) -> None:
        self.path = Path(dirpath) / "last.ckpt"
        self.signal: int | None = None  # the signal that stopped training, if one did
        self.agreed = False  # the ranks have agreed on it (no further agreement to make)
        self._saved = False
        self._in_validation = False  # the signal stopped an epoch's validation
        self._own = False  # this callback installed the handler (a spawned rank)

    def setup(self, trainer, pl_module, stage: str) -> None:
        if not SIGNALS.installed:  # a rank spawned by ddp_spawn: the kit's handler here too
            SIGNALS.install(alone=trainer.world_size == 1)
            self._own = True
        SIGNALS.alone, SIGNALS.trainer = trainer.world_size == 1, trainer

    def teardown(self, trainer, pl_module, stage: str) -> None:
        SIGNALS.trainer = None
        if self._own:
            SIGNALS.uninstall()
            self._own = False

    def on_train_start(self, trainer, pl_module) -> None:
        self.signal, self.agreed, self._saved, self._in_validation = None, False, False, False
        if trainer.world_size > 1:  # a signal in the data's setup or the restore
            agree_or_stop(trainer)
        elif SIGNALS.pending:
            request_stop(trainer)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.world_size > 1 and not trainer.received_sigterm:
            agreed = agreement.agreed_signal(trainer, SIGNALS.pending)
            if agreed:  # every rank, after this same step
                self.signal, self.agreed = agreed, True
                request_stop(trainer)
        if trainer.received_sigterm and not self._saved:
            self._save(trainer)
            if spawned(trainer):  # a SystemExit would end this rank as if it had finished
                raise StoppedBySignal(self.signal)

    def _eval_batch(self, trainer, pl_module) -> None:
        if trainer.world_size > 1 and signalled(trainer):
            pl_module.skip_rest = True  # its remaining batches are not computed

    def on_validation_batch_end(self, trainer, pl_module, *args) -> None:
        self._eval_batch(trainer, pl_module)

    def on_test_batch_end(self, trainer, pl_module, *args) -> None:
        self._eval_batch(trainer, pl_module)

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        agree_or_stop(trainer)  # before the dev set's figures and decoding (collectives)

    def on_test_epoch_end(self, trainer, pl_module) -> None:
        agree_or_stop(trainer)

    def _save(self, trainer) -> None:
        self.signal = self.signal or SIGNALS.pending or signal.SIGTERM
        with inline_writes(trainer):  # on disk before the barrier lets the other ranks exit
            trainer.save_checkpoint(self.path, weights_only=False)  # all of it, to resume
        self._saved = True

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        from lightning.pytorch.utilities.exceptions import SIGTERMException

        fitting = trainer.state.fn == "fit"  # a test's weights are best.ckpt's: never last.ckpt
        if isinstance(exception, SIGTERMException) and fitting and not self._saved:
            self._in_validation = trainer.validating and not trainer.sanity_checking
            self._save(trainer)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict[str, Any]) -> None:
        if self._in_validation:
            rewind_validation(checkpoint)
