"""Time (and optionally profile) one training step of a Luong model, without Lightning.

    python -m scripts.benchmarks.step_profile [--feed 0|1] [--dropout 0.2] [--hidden 256]
    python -m scripts.benchmarks.step_profile --paper --device cuda [--bf16] [--feed 0|1]
    (either with --profile)

A fixed batch of random words; prints the median of three 10-step windows in ms per step,
the part of it spent issuing the forward pass, and target tokens per second. The default
is the m30k_small model (batch 64 pairs of 13 words, its vocabulary sizes, Adam);
``--paper`` is the paper's 4x1000 model with 50K vocabularies, local-p attention, reversed
sources, batch 128 pairs of 24 words and SGD. On a GPU the clock waits for the device.
"""

from __future__ import annotations

import argparse
import time

import torch

from luong_lit.data.loading.batching import collate
from luong_lit.nn import Seq2Seq
from luong_lit.nn.loss import token_nll


def build(args):
    if args.paper:
        model = Seq2Seq(
            src_vocab_size=50000,
            tgt_vocab_size=50000,
            embed_size=1000,
            hidden_size=1000,
            num_layers=4,
            dropout=args.dropout,
            attention=args.attention or "local_p",
            score="general",
            feed_input=bool(args.feed),
            reverse_source=True,
            bias=False,
        )
        return model, torch.optim.SGD(model.parameters(), 1.0), (128, 50000, 50000, 24)
    model = Seq2Seq(
        src_vocab_size=5921,
        tgt_vocab_size=7859,
        embed_size=args.hidden,
        hidden_size=args.hidden,
        num_layers=2,
        dropout=args.dropout,
        attention=args.attention or "global",
        score="general",
        feed_input=bool(args.feed),
    )
    return model, torch.optim.Adam(model.parameters(), 1e-3, fused=True), (64, 5921, 7859, 13)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--feed", type=int, default=1)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--attention", default=None, help="global, local_m or local_p")
    ap.add_argument(
        "--paper", action="store_true", help="the paper's 4x1000 model, 50K vocabularies"
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (mixed precision)")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.manual_seed(0)
    model, opt, (B, V_src, V_tgt, n) = build(args)
    model.to(args.device)
    g = torch.Generator().manual_seed(0)
    batch = collate(
        [
            (
                i,
                torch.randint(4, V_src, (n,), generator=g).tolist(),
                torch.randint(4, V_tgt, (n,), generator=g).tolist(),
            )
            for i in range(B)
        ]
    ).to(args.device)
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)

    def step() -> tuple[int, float]:
        t0 = time.perf_counter()
        with torch.autocast(torch.device(args.device).type, torch.bfloat16, enabled=args.bf16):
            nll, tokens = token_nll(model, batch)
        t_fwd = time.perf_counter() - t0  # issuing the forward pass (on a GPU: not running it)
        opt.zero_grad()
        (nll / B).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        return tokens, t_fwd

    for _ in range(3):
        step()
    sync()
    windows = []
    for _ in range(3):
        t0, tokens, fwd = time.perf_counter(), 0, 0.0
        for _ in range(10):
            k, f = step()
            tokens, fwd = tokens + k, fwd + f
        sync()
        windows.append(((time.perf_counter() - t0) / 10, fwd / 10))
    dt, fwd = sorted(windows)[1]
    rate = tokens / 10 / dt
    print(
        f"{dt * 1000:.1f} ms/step (forward issued in {fwd * 1000:.1f}), {rate:.0f} target tokens/s"
    )
    if args.profile:
        profile(step, sync, args.device)


def profile(step, sync, device: str) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    cuda = device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch_profile(activities=activities, record_shapes=not cuda) as prof:
        step()
        sync()
    print(
        prof.key_averages(group_by_input_shape=not cuda).table(
            sort_by="self_cpu_time_total", row_limit=25
        )
    )
    if cuda:
        print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=15))


if __name__ == "__main__":
    main()
