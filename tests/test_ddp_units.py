"""Parts of data-parallel training, each on its own.

The captured step: its gradients are the graph's outputs, handed to the trainer's backward, so
that DDP's all-reduce hooks fire there, outside the graph. On a CPU the handover is checked
without the graph (``EagerSteps``): two gloo ranks, DDP's averaged gradients through the
handover equal DDP's own eager step's (the graph itself: the GPU stage ``ddp_capture``).
The batches dealt to ranks, and the run folder the ranks of a torchrun or srun agree on."""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from conftest import small_model, toy_batch

from luong_lit.engines.graphs import GraphedSteps, replayed_loss
from luong_lit.nn.fast.static import static_nll


class EagerSteps(GraphedSteps):
    """:class:`GraphedSteps` without the graphs: every call runs the loss and its gradients
    (as outputs) again. The same handover to the trainer, where no CUDA device is: what a CPU
    test of the data-parallel path checks against DDP's own eager step."""

    def __call__(self, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, list]:
        loss, grads = self._run(inputs)
        return loss.detach(), [None if g is None else g.detach() for g in grads]


class Handed(torch.nn.Module):
    """A model whose loss comes through the handover, as the fast engine's captured step's."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net
        params = [p for p in net.parameters() if p.requires_grad]
        self.steps = EagerSteps(self._nll, params)

    def _nll(self, src, src_len, tgt_in, tgt_out):
        return static_nll(self.net, src, src_len, tgt_in, tgt_out)[0]

    def forward(self, batch) -> torch.Tensor:
        inputs = {k: getattr(batch, k) for k in ("src", "src_len", "tgt_in", "tgt_out")}
        loss, grads = self.steps(inputs)
        return replayed_loss(loss, grads, self.steps.params)


class Eager(torch.nn.Module):
    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, batch) -> torch.Tensor:
        return static_nll(self.net, batch.src, batch.src_len, batch.tgt_in, batch.tgt_out)[0]


def grads_of(wrapper, rank: int) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        wrapper(small_model(src_vocab_size=40, tgt_vocab_size=40))
    )
    for p in model.parameters():
        p.grad = None
    model(toy_batch(seed=rank)).backward()  # each rank its own batch: the average differs
    return [p.grad.clone() for p in model.module.net.parameters()]


def ranks(rank: int, port: int, out: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        eager, handed = grads_of(Eager, rank), grads_of(Handed, rank)
        out[rank] = [bool(torch.equal(a, b)) for a, b in zip(eager, handed)]
        out[f"averaged{rank}"] = not torch.equal(eager[0], _alone(rank)[0])
    finally:
        dist.destroy_process_group()


def _alone(rank: int) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = Eager(small_model(src_vocab_size=40, tgt_vocab_size=40))
    model(toy_batch(seed=rank)).backward()
    return [p.grad for p in model.net.parameters()]


@pytest.mark.xdist_group("ranks")
def test_the_handover_gives_ddps_averaged_gradients_on_two_gloo_ranks():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(ranks, args=(port, out), nprocs=2, join=True)
        found = dict(out)
    assert found[0] and all(found[0]) and all(found[1])  # equal, parameter by parameter
    assert found["averaged0"]  # and they are the ranks' average, not one rank's own


# ------------------------------------------------------------------ batches dealt to ranks
def sampler(n: int = 3000, seed: int = 3, **options):
    from luong_lit.data.loading.batching import BucketBatchSampler

    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, 50, (n,), generator=g).tolist()
    tgt = torch.randint(1, 50, (n,), generator=g).tolist()
    return BucketBatchSampler(src, tgt, 16, chunk_batches=20, seed=seed, **options), tgt


def test_the_ranks_of_a_step_get_batches_of_similar_length_and_every_batch_once():
    world = 4
    s, tgt = sampler()
    per_rank = []
    for rank in range(world):
        s.set_rank(rank, world)
        per_rank.append(list(iter(s)))
    steps = list(zip(*per_rank))
    assert len({len(p) for p in per_rank}) == 1 and len(steps) == len(s)
    seen = sorted(int(i) for step in steps for b in step for i in b)
    assert len(seen) == len(set(seen))  # no sentence twice
    spread = [max(max(tgt[i] for i in b) for b in st) - min(max(tgt[i] for i in b) for b in st)
              for st in steps]  # fmt: skip
    s.set_rank(0, 1)
    one = s.batches()  # one process's epoch, shuffled: the same batches, dealt at random
    at_random = [max(max(tgt[i] for i in b) for b in one[k : k + world])
                 - min(max(tgt[i] for i in b) for b in one[k : k + world])
                 for k in range(0, len(one) - world + 1, world)]  # fmt: skip
    assert sum(spread) / len(spread) < 0.5 * sum(at_random) / len(at_random)


def test_evaluation_batches_are_dealt_whole_and_none_is_dropped():
    s, _ = sampler(n=100, shuffle=False)
    one = [sorted(b.tolist()) for b in s.batches()]
    shares = []
    for rank in range(3):
        s.set_rank(rank, 3)
        shares += [sorted(b.tolist()) for b in iter(s)]
        assert len(s) == len(list(iter(s))) >= 1
    assert sorted(shares) == sorted(one)


def test_a_dev_set_smaller_than_the_ranks_batches_gives_every_rank_a_batch():
    s, _ = sampler(n=10, shuffle=False)  # one batch of 16 would hold it all
    for rank in range(4):
        s.set_rank(rank, 4)
        assert len(s) == 1 and len(list(iter(s))) == 1


def test_the_ranks_of_torchrun_and_srun_agree_on_a_run_folder(monkeypatch):
    from luong_lit.sweeps.resolvers import run_name

    stamp = "2026-11-29_10-47-18"
    for var in ("TORCHELASTIC_RUN_ID", "WORLD_SIZE", "SLURM_JOB_ID", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)
    assert run_name(stamp) == stamp
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job7")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert run_name(stamp) == run_name("2026-11-29_10-47-19") == "2026-11-29_torchrun-job7"
    monkeypatch.delenv("TORCHELASTIC_RUN_ID")
    monkeypatch.setenv("SLURM_JOB_ID", "881")
    monkeypatch.setenv("SLURM_NTASKS", "16")
    assert run_name(stamp) == "2026-11-29_slurm-881-0"


def test_sharded_decoding_keeps_every_rank_busy_at_32_ranks():
    """WMT's dev set on 32 ranks: no rank idles (batches of 128 would leave 8 without one), and
    the shares cover every sentence once."""
    import random

    from luong_lit.training.sharded import shard_of

    rng = random.Random(0)
    src = [[5] * rng.randint(1, 60) for _ in range(3000)]
    shares = [shard_of(src, 128, rank, 32) for rank in range(32)]
    assert min(len(s) for s in shares) > 0
    assert sorted(i for s in shares for i in s) == list(range(3000))
    assert max(map(len, shares)) <= 2 * min(map(len, shares))  # and about equally


def test_torchrun_without_an_id_hands_rank_0s_start_time_to_every_rank(monkeypatch):
    """No ``--rdzv-id``: each rank's clock gives its own stamp; rank 0's, put on the agent's
    store once, names the folder in every rank, however often Hydra asks."""
    import torch.distributed as dist

    from luong_lit.sweeps import resolvers

    monkeypatch.setattr(resolvers, "_shared", {})
    store = dist.HashStore()
    assert resolvers.rank_zeros_stamp("2026-11-29_10-47-18", store, 0) == "2026-11-29_10-47-18"
    monkeypatch.setattr(resolvers, "_shared", {})  # another process: rank 1, a second later
    assert resolvers.rank_zeros_stamp("2026-11-29_10-47-19", store, 1) == "2026-11-29_10-47-18"
    monkeypatch.setattr(resolvers, "_shared", {})  # rank 0 asked again by Hydra, later still
    assert resolvers.rank_zeros_stamp("2026-11-29_10-47-20", store, 0) == "2026-11-29_10-47-18"
