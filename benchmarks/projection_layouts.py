"""Time the output layer ``W_s h_tilde_t + b`` (paper Eq. 6) in several CPU layouts.

    python benchmarks/projection_layouts.py [--rows 10,30,60,100,150,300,512] [--vocab 7859] [--d 256]

For each number of rows ``n`` (decoding: beam rows; training: a chunk of the fused loss) it
times, alternating in rounds, the product that writes ``(n, V)`` (``F.linear``), the one that
writes ``(V, n)`` and transposes back in blocks (the decoding path before column blocks), and
the product written ``cols`` output columns at a time, and oneDNN's inner-product kernel
(both in ``luong_lit.nn.projection``; oneDNN only where its probe accepts it). Prints one
JSON line per ``n``: median ms per product over the rounds and GFLOP/s.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from torch.nn import functional as F

from luong_lit.nn.projection import linear_columns, onednn_linear
from luong_lit.runtime import configure_cpu


def transposed(h, W, b, block: int = 512):
    """The ``(V, n)`` product, transposed back into ``(n, V)`` in cache-sized blocks."""
    out = h.new_empty(h.size(0), W.size(0))  # (n, V)
    logits_T = torch.addmm(b.unsqueeze(1), W, h.t())  # (V, n)
    for v in range(0, W.size(0), block):
        out[:, v:v + block].copy_(logits_T[v:v + block].t())
    return out


def clock(fn, reps: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="10,30,60,100,150,300,512")
    ap.add_argument("--vocab", type=int, default=7859)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--cols", default="128,256,512,1024")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    configure_cpu(args.threads)
    g = torch.Generator().manual_seed(0)
    W, b = torch.randn(args.vocab, args.d, generator=g) * 0.1, torch.randn(args.vocab, generator=g)
    for n in map(int, args.rows.split(",")):
        h = torch.randn(n, args.d, generator=g)
        ways = {"linear": lambda: F.linear(h, W, b), "transposed": lambda: transposed(h, W, b)}
        ways |= {f"cols{c}": (lambda c=c: linear_columns(h, W, b, int(c))) for c in args.cols.split(",")}
        if onednn_linear() is not None:
            ways["onednn"] = lambda: onednn_linear()(h, W, b)
        ref = ways["linear"]()  # (n, V)
        assert all(torch.allclose(f(), ref, atol=1e-4) for f in ways.values()), "layouts disagree"
        reps = max(3, int(3000 / n))
        times = {k: [] for k in ways}
        for _ in range(args.rounds):
            for k, f in ways.items():
                times[k].append(clock(f, reps))
        gflop = 2 * n * args.d * args.vocab / 1e9
        med = {k: statistics.median(v) for k, v in times.items()}
        print(json.dumps({"rows": n, "ms": {k: round(v, 3) for k, v in med.items()},
                          "gflops": {k: round(gflop / (v / 1e3), 1) for k, v in med.items()}}))


if __name__ == "__main__":
    main()
