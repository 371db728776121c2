"""How the ranks of a data-parallel run agree to stop on a signal that reached some of them,
wherever they are (:class:`~luong_lit.training.signals.SignalCheckpoint` uses it).

The ranks train the same number of steps, so after every training step they agree in one
all-reduce (:func:`agreed_signal`). Validation, the test and their decoding give the ranks
unequal shares, so no collective can be made per batch there: a rank that holds a signal posts
it on the process group's store (:func:`post`), every rank looks there after each of its
batches (:func:`posted`) and, once it is there, does the rest of its share no more; then, at the
points every rank passes (a loop's end, after a decoding's gather: :func:`agree_or_stop`), they
agree in one all-reduce and all raise the stop together. So the ranks always meet in the same
collectives, and the checkpoint a stop writes (a collective itself) is written by all of them.
"""

from __future__ import annotations

from luong_lit.training.lightning_internals import process_group_store

KEY = "luong_lit/stop"  #: the store key of a posted signal


def post(signum: int) -> None:
    """Post ``signum`` for every rank to see (the first signal posted stands)."""
    s = process_group_store()
    if not s.check([KEY]):
        s.set(KEY, str(signum))


def posted() -> int:
    """The signal some rank has posted, 0 if none (no wait: a key check, then a read)."""
    s = process_group_store()
    return int(s.get(KEY)) if s.check([KEY]) else 0


def agreed_signal(trainer, pending: int | None) -> int:
    """The signal some rank has received (the largest number, where several have), 0 if none:
    an all-reduce every rank makes at the same point."""
    import torch
    import torch.distributed as dist

    found = torch.tensor([pending or 0], device=trainer.strategy.root_device)
    dist.all_reduce(found, op=dist.ReduceOp.MAX)
    return int(found.item())
