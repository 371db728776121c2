"""Time (and optionally profile) one training step of the m30k_small model, without Lightning.

    python benchmarks/step_profile.py [--feed 0|1] [--dropout 0.2] [--hidden 256] [--profile]

A fixed batch of 64 pairs of 13 random words (vocabularies of m30k_small's sizes); prints the
median of three 10-step windows in ms per step and target tokens per second.
"""
from __future__ import annotations

import argparse
import time

import torch

from luong_lit.data.batching import collate
from luong_lit.metrics.perplexity import token_nll
from luong_lit.nn import Seq2Seq


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--feed", type=int, default=1)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.manual_seed(0)
    B, V_src, V_tgt = 64, 5921, 7859
    model = Seq2Seq(V_src, V_tgt, args.hidden, args.hidden, 2, args.dropout, "global", "general", bool(args.feed))
    opt = torch.optim.Adam(model.parameters(), 1e-3, fused=True)
    g = torch.Generator().manual_seed(0)
    batch = collate([(i, torch.randint(4, V_src, (13,), generator=g).tolist(),
                      torch.randint(4, V_tgt, (13,), generator=g).tolist()) for i in range(B)])

    def step() -> int:
        nll, tokens = token_nll(model, batch)
        opt.zero_grad()
        (nll / B).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        return tokens

    for _ in range(3):
        step()
    times = []
    for _ in range(3):
        t0, tokens = time.perf_counter(), 0
        for _ in range(10):
            tokens += step()
        times.append((time.perf_counter() - t0) / 10)
    dt = sorted(times)[1]
    print(f"{dt * 1000:.1f} ms/step, {tokens / 10 / dt:.0f} target tokens/s")
    if args.profile:
        from torch.profiler import profile

        with profile(record_shapes=True) as prof:
            step()
        print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=25))


if __name__ == "__main__":
    main()
