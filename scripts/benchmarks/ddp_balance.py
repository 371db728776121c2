"""How busy the ranks of a data-parallel step are, batches dealt at random or in length groups.

    python -m scripts.benchmarks.ddp_balance [--ranks 2 4 8] [--sentences 400000] [--batch-size 128]

Each step waits for its slowest rank, so a rank's share of the step's wall time is its batch's
cost over the slowest batch's. A batch's cost is taken as its rows times its longest target
plus its longest source (the decoder runs its longest sentence's steps for every row; the
encoder its longest source's): the padded positions computed. The lengths are WMT'14's,
resampled from the training sample of the data mirror (``wmt14/tok/opennmt_toy_ende``: news
and Europarl sentences, tokenised; lines over 50 words dropped as training drops them) to an
epoch of ``--sentences`` pairs. For each world size this prints one JSON line: the ranks'
busy share (all ranks' costs over ranks × slowest, summed over the epoch's steps) when the
sampler deals shuffled batches in turn (``random``: each rank a random batch) and as it deals
them now (``grouped``: the ranks of a step get consecutive batches of one length-sorted chunk).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys

import numpy as np

from luong_lit.data.loading.batching import BucketBatchSampler
from luong_lit.data.sources.fetch import local_mirror

SAMPLE = (
    "wmt14/tok/opennmt_toy_ende/src-train.txt.gz",
    "wmt14/tok/opennmt_toy_ende/tgt-train.txt.gz",
)


def lengths(n: int, max_len: int = 50, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` (source, target) length pairs resampled from the WMT training sample."""
    root = local_mirror("scripts.benchmarks.ddp_balance")
    sides = []
    for path in SAMPLE:
        with gzip.open(root / path, "rt", encoding="utf-8") as fh:
            sides.append([len(line.split()) for line in fh])
    pairs = [(s, t) for s, t in zip(*sides) if 0 < s <= max_len and 0 < t <= max_len]
    rng = random.Random(seed)
    drawn = [pairs[rng.randrange(len(pairs))] for _ in range(n)]
    return np.array([s for s, _ in drawn]), np.array([t for _, t in drawn])


def cost(batch: np.ndarray, src: np.ndarray, tgt: np.ndarray) -> int:
    return len(batch) * (int(tgt[batch].max()) + int(src[batch].max()))


def busy(steps: list[list[np.ndarray]], src, tgt) -> float:
    """The ranks' busy share over ``steps`` (each a list of the ranks' batches)."""
    done = wall = 0
    for batches in steps:
        costs = [cost(b, src, tgt) for b in batches]
        done, wall = done + sum(costs), wall + len(costs) * max(costs)
    return done / wall


def dealt(sampler: BucketBatchSampler, world: int) -> list[list[np.ndarray]]:
    """One epoch's steps as the sampler deals them to ``world`` ranks."""
    per_rank = []
    for rank in range(world):
        sampler.set_rank(rank, world)
        per_rank.append(list(iter(sampler)))
    return [list(step) for step in zip(*per_rank)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--sentences", type=int, default=400_000)
    ap.add_argument("--batch-size", type=int, default=128)
    args = ap.parse_args()
    src, tgt = lengths(args.sentences)
    sampler = BucketBatchSampler(src, tgt, args.batch_size, seed=1)
    shuffled = sampler.batches()  # one process's epoch: shuffled batches
    for world in args.ranks:
        n = len(shuffled) // world
        random_steps = [shuffled[i * world : (i + 1) * world] for i in range(n)]
        grouped = dealt(BucketBatchSampler(src, tgt, args.batch_size, seed=1), world)
        print(json.dumps({"ranks": world, "steps": len(grouped),
                          "random": round(busy(random_steps, src, tgt), 4),
                          "grouped": round(busy(grouped, src, tgt), 4)}))  # fmt: skip


if __name__ == "__main__":
    from luong_lit.cli import run_command  # a missing mirror or bad input: one line, exit 2

    sys.exit(run_command(main))
