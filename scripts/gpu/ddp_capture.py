"""The captured training step under data parallelism, on a GPU: DDP's averaged gradients of the
captured step (the graph computes them as outputs, the trainer's backward hands them to DDP's
all-reduce) against DDP's own eager step, on two ranks, and each path's step time.

    python -m scripts.gpu.ddp_capture [--steps 20] [--hidden 512]

With two or more GPUs the ranks take one each (NCCL); with one, both share it (gloo, which
all-reduces CUDA tensors). Prints one JSON line: the largest gradient difference per step, and
the mean step time of each path on rank 0.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from luong_lit.data.loading.batching import Batch
from luong_lit.engines.graphs import GraphedSteps, replayed_loss
from luong_lit.nn import Seq2Seq
from luong_lit.nn.fast.static import static_nll


class Step(torch.nn.Module):
    """The model's summed NLL, eager or through the captured step's handover."""

    def __init__(self, net: Seq2Seq, captured: bool) -> None:
        super().__init__()
        self.net, self.captured = net, captured
        params = [p for p in net.parameters() if p.requires_grad]
        self.graphs = GraphedSteps(self._nll, params) if captured else None

    def _nll(self, src, src_len, tgt_in, tgt_out):
        return static_nll(self.net, src, src_len, tgt_in, tgt_out)[0]

    def forward(self, batch: Batch) -> torch.Tensor:
        inputs = {k: getattr(batch, k) for k in ("src", "src_len", "tgt_in", "tgt_out")}
        if not self.captured:
            return self._nll(**inputs)
        loss, grads = self.graphs(inputs)
        return replayed_loss(loss, grads, self.graphs.params)


def batch(rank: int, step: int, device, V: int = 1000, B: int = 64, S: int = 30) -> Batch:
    g = torch.Generator().manual_seed(1000 * step + rank)
    src = torch.randint(4, V, (B, S), generator=g)
    tgt_out = torch.randint(4, V, (B, S), generator=g)
    tgt_in = torch.cat([torch.full((B, 1), 2), tgt_out[:, :-1]], 1)
    return Batch(src, torch.full((B,), S), tgt_in, tgt_out, torch.arange(B)).to(device)


def grads(model, rank: int, steps: int, device) -> tuple[list[list[torch.Tensor]], float]:
    found, times = [], []
    for step in range(steps):
        for p in model.parameters():
            p.grad = None
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model(batch(rank, step, device)).backward()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        found.append([p.grad.detach().clone() for p in model.module.net.parameters()])
    return found, sum(times[3:]) / max(1, len(times) - 3)  # after the capture


def rank_main(rank: int, port: int, args, out) -> None:
    gpus = torch.cuda.device_count()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl" if gpus > 1 else "gloo", rank=rank, world_size=2)
    device = torch.device("cuda", rank if gpus > 1 else 0)
    torch.cuda.set_device(device)
    result = {}
    for captured in (False, True):
        torch.manual_seed(0)
        net = Seq2Seq(1000, 1000, embed_size=args.hidden, hidden_size=args.hidden,
                      num_layers=2).to(device)  # fmt: skip
        model = torch.nn.parallel.DistributedDataParallel(Step(net, captured))
        result[captured] = grads(model, rank, args.steps, device)
    if rank == 0:
        diffs = [max((a - b).abs().max().item() for a, b in zip(e, c))
                 for e, c in zip(result[False][0], result[True][0])]  # fmt: skip
        out.update(
            max_grad_diff=max(diffs),
            eager_step_s=result[False][1],
            captured_step_s=result[True][1],
            gpus=gpus,
            backend=dist.get_backend(),
        )
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=512)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(rank_main, args=(port, args, out), nprocs=2, join=True)
        print(json.dumps({"check": "ddp_capture", **dict(out)}))


if __name__ == "__main__":
    main()
