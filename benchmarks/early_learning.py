"""Dev perplexity of m30k_small after a few hundred steps, for training-recipe variants.

    LUONG_LIT_DATA=../shared/data python benchmarks/early_learning.py --steps 300 \
        [--chunk-batches 100] [--forget-bias 1.0] [--reverse] [--dropout 0.2] [--loss-norm sentences|tokens]
        [--init uniform|xavier] [--hidden-dropout 0.2]
    LUONG_LIT_DATA=../shared/data python benchmarks/early_learning.py --recipe --steps 450 --eval-every 150 \
        [--chunk-batches 1|100]

Plain PyTorch loop (no Lightning) over the real data pipeline, seed 1234. Without ``--recipe``
the model is built from the options above (the variants of the first m30k_small runs); with
it, from the current ``m30k_small`` experiment config (model, label smoothing), only the
batching (``data.chunk_batches``) changed. Prints the dev perplexity every ``--eval-every``
steps, the training speed (target tokens/s, the evaluations included) and the mean length of
a batch's longest target.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from luong_lit.data import TranslationDataModule
from luong_lit.metrics.perplexity import perplexity, token_nll
from luong_lit.nn import Seq2Seq


def from_options(args):
    """(datamodule, model, label smoothing) from this script's own options."""
    dm = TranslationDataModule("multi30k", "en", "de", min_freq=2, vocab_size=None, batch_size=64,
                               chunk_batches=args.chunk_batches)
    dm.setup()
    model = Seq2Seq(len(dm.src_vocab), len(dm.tgt_vocab), 256, 256, 2, args.dropout, "global", "general",
                    bool(args.feed), args.reverse, forget_bias=args.forget_bias,
                    hidden_dropout=args.hidden_dropout, init=args.init)
    return dm, model, 0.0


def recipe_config(args, overrides=()):
    """The composed ``m30k_small`` config with ``data.chunk_batches`` from ``args``."""
    from ours_window import compose_train

    tmp = Path(tempfile.gettempdir()) / "early_learning"
    return compose_train([f"paths.output_dir={tmp}", f"data.chunk_batches={args.chunk_batches}", *overrides])


def recipe_module(args, overrides=()):
    """(datamodule, ``LuongLitModule``) of the ``m30k_small`` config with ``overrides``."""
    from luong_lit.train import build

    dm, module, _ = build(recipe_config(args, overrides))
    dm.setup("fit")
    return dm, module


def from_recipe(args):
    """(datamodule, model, label smoothing) of the ``m30k_small`` experiment config."""
    dm, module = recipe_module(args)
    return dm, module.net, float(module.label_smoothing)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--eval-every", type=int, default=0, help="also evaluate every N steps")
    ap.add_argument("--recipe", action="store_true", help="the current m30k_small config")
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
    dm, model, eps = (from_recipe if args.recipe else from_options)(args)
    model.train()
    opt = torch.optim.Adam(model.parameters(), 1e-3, fused=True)
    t0, step, tokens_seen, longest = time.perf_counter(), 0, 0, 0
    while step < args.steps:
        for batch in dm.train_dataloader():
            nll, tokens = token_nll(model, batch, eps)
            opt.zero_grad()
            (nll / (tokens if args.loss_norm == "tokens" else len(batch))).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            step, tokens_seen = step + 1, tokens_seen + batch.num_tgt_tokens
            longest += batch.tgt_out.size(1)  # the batch's longest target, </s> included
            if step == args.steps or (args.eval_every and step % args.eval_every == 0):
                ppl = perplexity(model, dm.splits["dev"].examples())  # eval mode, then back to train
                print(f"dev ppl after {step} steps: {ppl:.1f}", flush=True)
            if step == args.steps:
                break
    print(f"{tokens_seen / (time.perf_counter() - t0):.0f} target tokens/s, evaluations included "
          f"({time.perf_counter() - t0:.0f} s); longest target per batch {longest / step:.1f} on average")


if __name__ == "__main__":
    main()
