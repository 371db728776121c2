"""A SIGTERM that reaches a process before its run's handler is in place (a rank of a data-parallel
run importing its libraries, or composing its config): noted here, not fatal, and handed to the
run's handler (:class:`~luong_lit.training.signals.RunSignals`), which acts on it as on one that
came after. Installed first thing by ``python -m luong_lit`` and ``python -m luong_lit.train``."""

from __future__ import annotations

import os
import signal

received: list[int] = []  #: the signals noted so far, in order


def _note(signum, frame) -> None:
    received.append(signum)


def _default_in_a_fork() -> None:
    """A forked child (a pool's worker, a loader's) dies of SIGTERM as by default: noted here,
    the signal would leave a worker its pool's ``terminate`` then waits for."""
    if signal.getsignal(signal.SIGTERM) is _note:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


os.register_at_fork(after_in_child=_default_in_a_fork)


def take() -> None:
    """Note SIGTERM from now on (the main thread only)."""
    try:
        signal.signal(signal.SIGTERM, _note)
    except ValueError:  # not the main thread: nothing changes
        pass
