"""A rank of a data-parallel run that dies (``kill -9``, out of memory) ends the run in seconds
with one line: which rank was lost, the last checkpoint and the command that resumes from it
(:class:`RankLost`), never a traceback of the collective that found it gone.

The other ranks learn it from their next collective, which fails (gloo at once; NCCL after the
process group's timeout, ``ddp_timeout_s``: :func:`~luong_lit.training.instantiate.ddp_strategy`),
and from Lightning's watch over the ranks it started, which would end the first rank with
SIGKILL, without a word: here it leaves a rank that stops on a signal alone (its exit status is
128+signal, the others stop with it) and gives the others a few seconds to say what happened
before it ends them (:func:`~luong_lit.training.lightning_internals.observe_ranks_gently`).
"""

from __future__ import annotations

from pathlib import Path


class RankLost(Exception):
    """A rank of this run died; ``ranks``: which (empty where this rank cannot tell)."""

    def __init__(self, ranks: list[int], checkpoint: Path) -> None:
        super().__init__(f"rank {ranks} lost")
        self.ranks, self.checkpoint = ranks, checkpoint


def is_lost_peer(err: BaseException, trainer) -> bool:
    """Whether ``err`` is a collective that found a peer gone (a data-parallel run only)."""
    import torch.distributed as dist

    if getattr(trainer, "world_size", 1) <= 1:
        return False
    if isinstance(err, dist.DistBackendError):
        return True
    said = str(err)
    gone = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "Timed out",
            "NCCL", "Gloo", "gloo")  # fmt: skip
    return isinstance(err, RuntimeError) and any(x in said for x in gone)


def lost_ranks(trainer, wait_s: float = 2.0) -> list[int]:
    """The ranks this process started that have died (rank 0 starts the others on its
    machine); empty where it started none, or none died. A killed rank's sockets close before
    its process is seen to end, so a collective can fail first: ``wait_s`` gives the dead
    process that long to be seen."""
    import time

    procs = getattr(trainer.strategy.launcher, "procs", None) or []
    until = time.monotonic() + wait_s
    while True:
        codes = [proc.poll() for proc in procs]
        found = [i for i, code in enumerate(codes, 1)
                 if code not in (None, 0) and not 128 < code < 160]  # fmt: skip
        if found or not procs or time.monotonic() >= until:
            return found  # a clean stop on a signal (128+signal) is not a loss
        time.sleep(0.05)


def lost_message(ranks: list[int], checkpoint: Path, resume: str) -> str:
    from luong_lit.training.folders import step_of

    who = f"rank {', '.join(map(str, ranks))}" if ranks else "a rank of this run"
    kept = f"{checkpoint} (step {step_of(checkpoint)})" if checkpoint.is_file() else "nothing yet"
    return (f"{who} was lost (its process ended: killed, or out of memory); the last finished "
            f"step is saved in {kept}; resume with: {resume}")  # fmt: skip
