"""Dev perplexity of m30k_small after a few hundred steps, for training-recipe variants.

    LUONG_LIT_DATA=../shared/data python benchmarks/early_learning.py --steps 300 \
        [--chunk-batches 100] [--forget-bias 1.0] [--reverse] [--dropout 0.2] [--loss-norm sentences|tokens]
        [--init uniform|xavier] [--hidden-dropout 0.2]

Plain PyTorch loop (no Lightning) over the real data pipeline, seed 1234.
"""
from __future__ import annotations

import argparse
import math
import time

import torch

from luong_lit.data import TranslationDataModule
from luong_lit.data.batching import collate
from luong_lit.metrics.perplexity import token_nll
from luong_lit.nn import Seq2Seq


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--chunk-batches", type=int, default=100)
    ap.add_argument("--forget-bias", type=float, default=0.0)
    ap.add_argument("--reverse", action="store_true")
    ap.add_argument("--feed", type=int, default=1)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--loss-norm", choices=["sentences", "tokens"], default="sentences")
    ap.add_argument("--init", choices=["uniform", "xavier"], default="uniform")
    ap.add_argument("--hidden-dropout", type=float, default=0.0)
    args = ap.parse_args()
    torch.manual_seed(1234)
    dm = TranslationDataModule("multi30k", "en", "de", min_freq=2, vocab_size=None, batch_size=64,
                               chunk_batches=args.chunk_batches)
    dm.setup()
    model = Seq2Seq(len(dm.src_vocab), len(dm.tgt_vocab), 256, 256, 2, args.dropout, "global", "general",
                    bool(args.feed), args.reverse, forget_bias=args.forget_bias,
                    hidden_dropout=args.hidden_dropout, init=args.init)
    opt = torch.optim.Adam(model.parameters(), 1e-3, fused=True)
    t0 = time.perf_counter()
    for step, batch in enumerate(dm.train_dataloader()):
        if step == args.steps:
            break
        nll, tokens = token_nll(model, batch)
        opt.zero_grad()
        (nll / (tokens if args.loss_norm == "tokens" else len(batch))).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
    model.eval()
    dev = dm.splits["dev"].examples()
    nll_sum, tok_sum = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(dev), 128):
            nll, tokens = token_nll(model, collate(dev[i:i + 128]))
            nll_sum, tok_sum = nll_sum + float(nll), tok_sum + tokens
    print(f"dev ppl after {args.steps} steps: {math.exp(nll_sum / tok_sum):.1f} "
          f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
