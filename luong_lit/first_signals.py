"""A SIGTERM that reaches a process before its run's handler is in place (a rank of a data-parallel
run importing its libraries, or composing its config): noted here, not fatal, and handed to the
run's handler (:class:`~luong_lit.training.signals.RunSignals`), which acts on it as on one that
came after. Installed first thing by ``python -m luong_lit`` and ``python -m luong_lit.train``."""

from __future__ import annotations

import signal

received: list[int] = []  #: the signals noted so far, in order


def _note(signum, frame) -> None:
    received.append(signum)


def take() -> None:
    """Note SIGTERM from now on (the main thread only)."""
    try:
        signal.signal(signal.SIGTERM, _note)
    except ValueError:  # not the main thread: nothing changes
        pass
