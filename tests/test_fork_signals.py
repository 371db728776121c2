"""A process forked while the kit holds the signals (a data pool's worker, a loader's) takes
the default actions at once: a pool's ``terminate`` (SIGTERM to its workers) ends a worker
even while it is blocked in a lock, where a Python handler would never run."""

from __future__ import annotations

import multiprocessing as mp
import signal

import pytest


def _handlers(out) -> None:
    out.put((signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)))


@pytest.mark.parametrize("holder", ["the run's handler", "the first signals' note"])
def test_a_forked_child_takes_the_default_actions(holder):
    from luong_lit import first_signals
    from luong_lit.training.signals import SIGNALS

    before = signal.getsignal(signal.SIGTERM)
    first_signals.take() if holder == "the first signals' note" else SIGNALS.install()
    try:
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        ctx = mp.get_context("fork")
        out = ctx.SimpleQueue()
        child = ctx.Process(target=_handlers, args=(out,))
        child.start()
        child.join(timeout=30)
        term, _ = out.get()
        assert term is signal.SIG_DFL
    finally:
        SIGNALS.uninstall()
        signal.signal(signal.SIGTERM, before)


def _blocked(lock) -> None:
    lock.acquire()  # never released: blocked in C, as a pool's idle worker can be


def test_a_worker_blocked_in_a_lock_dies_of_its_pools_sigterm():
    """Forked while a SIGTERM is only noted (a process's first moments, or after a run in it):
    the worker dies of the SIGTERM, as a pool's ``terminate`` needs."""
    from luong_lit import first_signals

    before = signal.getsignal(signal.SIGTERM)
    first_signals.take()
    try:
        ctx = mp.get_context("fork")
        lock = ctx.Lock()
        lock.acquire()
        child = ctx.Process(target=_blocked, args=(lock,))
        child.start()
        child.join(timeout=0.5)
        child.terminate()
        child.join(timeout=20)
        assert child.exitcode == -signal.SIGTERM
    finally:
        child.kill()
        signal.signal(signal.SIGTERM, before)
