"""Token batches against the main job's random batches, side by side in one run.

    python -m scripts.benchmarks.token_batches [--steps 300] [--out DIR] [OVERRIDE ...]

The main job (``m30k_small``) cuts random batches of 64 sentences (``data.chunk_batches=1``).
``data.max_tokens`` cuts batches of similar length up to a budget of padded target tokens; the
budget is chosen so that a batch holds as many real target tokens, on average, as a random one
(the same data per update). For each this prints one JSON line: the share of the padded target
positions of one epoch's batches that are real tokens, the training's target tokens per second
(its progress lines, the first left out), and the dev perplexity after ``--steps`` updates, from
the same seed. Give both runs the machine to themselves: nothing else should run beside it.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from luong_lit.config import compose
from luong_lit.data.loading.batching import BucketBatchSampler


def epoch_batches(overrides: list[str], max_tokens: int | None) -> tuple[list, np.ndarray]:
    """One epoch's training batches as the run would cut them, and the target lengths."""
    from hydra.utils import instantiate

    dm = instantiate(compose(overrides).data)
    dm.setup("fit")
    tgt = np.asarray(dm.train_store.lengths["tgt"])
    b = dm.batching
    budget, unit = (max_tokens, "tokens") if max_tokens else b.training_budget()
    sampler = BucketBatchSampler(dm.train_store.lengths["src"], tgt, budget, batch_by=unit,
                                 chunk_batches=b.chunk_batches, seed=b.seed)  # fmt: skip
    return sampler.batches(), tgt


def real_share(batches, tgt) -> tuple[float, float]:
    """Real target tokens over padded target positions (``</s>`` counted), and real tokens a
    batch."""
    real = sum(int(tgt[b].sum()) + len(b) for b in batches)
    padded = sum(len(b) * (int(tgt[b].max()) + 1) for b in batches)
    return real / padded, real / len(batches)


def matching_budget(overrides: list[str], per_batch: float) -> int:
    """The token budget whose batches hold ``per_batch`` real target tokens on average."""
    low, high = 52, 8000
    while high - low > 8:
        mid = (low + high) // 2
        _, per = real_share(*epoch_batches(overrides, mid))
        low, high = (mid, high) if per < per_batch else (low, mid)
    return high


def train(overrides: list[str], run: Path, steps: int) -> dict:
    cmd = [sys.executable, "-m", "luong_lit.train", *overrides, f"hydra.run.dir={run}",
           f"trainer.max_steps={steps}", f"trainer.val_check_interval={steps}",
           "test_after_training=false", "trainer.enable_progress_bar=false",
           "callbacks.progress.every_n_steps=50", "callbacks.progress.every_n_seconds=null",
           "callbacks.greedy_bleu.every_n_epochs=0", "overwrite=true"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(res.stderr[-2000:])
    speeds = [float(x.replace(",", "")) for x in re.findall(r"\| ([\d,]+) tok/s", res.stdout)]
    with open(run / "csv" / "metrics.csv", newline="") as fh:
        ppl = [float(r["val/ppl"]) for r in csv.DictReader(fh) if r.get("val/ppl")]
    return {"tok_per_s": round(float(np.mean(speeds[1:] or speeds)), 1), "dev_ppl": ppl[-1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", type=Path, default=Path("logs/benchmarks/token_batches"))
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    base = ["threads=2", *args.overrides]
    share, per = real_share(*epoch_batches(base, None))
    budget = matching_budget(base, per)
    tokens = [*base, f"data.max_tokens={budget}"]
    token_share, token_per = real_share(*epoch_batches(tokens, None))
    runs = (("random batches", base, share, per),
            (f"max_tokens={budget}", tokens, token_share, token_per))  # fmt: skip
    for name, overrides, real, held in runs:
        found = train(overrides, args.out / name.split("=")[0].replace(" ", "_"), args.steps)
        row = {"batches": name, "real_share": round(real, 4), "real_tokens_a_batch": round(held, 1)}
        print(json.dumps({**row, "updates": args.steps, **found}))


if __name__ == "__main__":
    main()
