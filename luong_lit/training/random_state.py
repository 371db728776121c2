"""Every rank's random state in a checkpoint, so that a data-parallel run resumed after a stop
draws the very dropout masks an unbroken run would have drawn on each rank."""

from __future__ import annotations

from typing import Any

import torch


def rng_state() -> dict[str, Any]:
    """This process's random state: the CPU generator's, and its CUDA device's, if any."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def gather_rng_states() -> list[dict[str, Any]]:
    """Every rank's :func:`rng_state`, in rank order (a collective: every rank calls it, as
    every rank writes a checkpoint together)."""
    import torch.distributed as dist

    states: list = [None] * dist.get_world_size()
    dist.all_gather_object(states, rng_state())
    return [{k: v.cpu() for k, v in s.items()} for s in states]


def restore_rng_state(state: dict[str, Any]) -> None:
    """Set this process's random state to ``state`` (of :func:`rng_state`)."""
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def save_rng(checkpoint: dict[str, Any], world_size: int) -> None:
    """The random state of every rank into ``checkpoint``: each draws its own dropout masks,
    and a resumed run continues each rank's (``rng_ranks``, in rank order; ``rng_torch`` and
    ``rng_cuda``: rank 0's, as one process keeps them)."""
    checkpoint["rng_torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        checkpoint["rng_cuda"] = torch.cuda.get_rng_state_all()
    if world_size > 1:  # every rank saves: a collective gather of the states
        checkpoint["rng_ranks"] = gather_rng_states()


def load_rng(checkpoint: dict[str, Any], world_size: int, rank: int) -> None:
    """This rank's random state from ``checkpoint`` (:func:`save_rng`), so that dropout masks
    continue exactly as in an unbroken run."""
    ranks = checkpoint.get("rng_ranks")
    if ranks and len(ranks) == world_size:
        restore_rng_state(ranks[rank])
        return
    if "rng_torch" in checkpoint:
        torch.set_rng_state(checkpoint["rng_torch"])
    cuda = checkpoint.get("rng_cuda")
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)
