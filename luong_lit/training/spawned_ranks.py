"""The ranks of a ``ddp_spawn`` run (``trainer=ddp_sim``) and a signal: the parent, which trains
nothing itself, passes a SIGTERM on to its ranks (:class:`SpawnedRanks`); a rank that stops on
one reports it as :class:`StoppedBySignal`, which the parent reads as a clean stop, its step
saved (:mod:`luong_lit.training.signals`).
"""

from __future__ import annotations

import os
import signal
from typing import Any


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
