"""What a bucket set costs the fixed-shape step, counted over one epoch's batches (no GPU needed).

    python -m scripts.benchmarks.bucket_padding experiment=wmt14_sample_local_p \
        --buckets 10,15,20,25,30,40,52 --buckets 8,12,16,20,24,28,32,36,40,46,52

``engine.graphs=static|capture`` pads every batch to ``engine.rows`` rows and to the smallest
bucket length that holds its longest source and target (``data.loading.buckets.bucket_shape``); with
``engine.shapes=pair`` the source and the target each get their own bucket length. For each
bucket set and both shapes this prints one JSON line over the training batches of one epoch
(the config's own batching): the decoder steps run against the batches' own lengths (the step
is sequential in ``t``, so this is the captured step's main cost), the share of the target
positions computed that are real tokens, how many graphs (distinct shapes) the epoch needs,
and how many batches fit no bucket and run in their own shape.
"""

from __future__ import annotations

import argparse
import json

import hydra

from luong_lit.config import compose
from luong_lit.data.loading.buckets import bucket_shape


class Tally:
    """One bucket set's counts over the batches it is shown."""

    def __init__(self, buckets: list[int], rows: int, square: bool) -> None:
        self.buckets, self.rows, self.square = buckets, rows, square
        self.own_steps = self.steps = self.positions = self.tokens = self.overflow = 0
        self.used: set[tuple[int, int, int]] = set()
        self.batches = 0

    def add(self, batch) -> None:
        t = batch.tgt_in.size(1)
        shape = bucket_shape(batch, self.rows, self.buckets, self.square)
        self.batches += 1
        self.own_steps += t
        self.tokens += int(batch.num_tgt_tokens)
        if shape is None:  # runs in its own shape
            self.overflow += 1
            self.steps, self.positions = self.steps + t, self.positions + len(batch) * t
            return
        self.used.add(shape)
        self.steps, self.positions = self.steps + shape[2], self.positions + shape[0] * shape[2]

    def report(self) -> dict:
        return {
            "buckets": self.buckets,
            "shapes": "square" if self.square else "pair",
            "decoder_steps_vs_own": round(self.steps / self.own_steps, 3),
            "real_target_share": round(self.tokens / self.positions, 3),
            "graphs": len(self.used),
            "own_shape_batches": self.overflow,
            "batches": self.batches,
        }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--buckets", action="append", required=True, help="comma-separated lengths")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args(argv)
    cfg = compose(args.overrides)
    dm = hydra.utils.instantiate(cfg.data)
    dm.setup("fit")
    sets = [sorted(int(n) for n in spec.split(",")) for spec in args.buckets]
    tallies = [Tally(b, int(cfg.engine.rows), sq) for b in sets for sq in (True, False)]
    for batch in dm.train_dataloader():
        for tally in tallies:
            tally.add(batch)
    for tally in tallies:
        print(json.dumps(tally.report()))


if __name__ == "__main__":
    main()
