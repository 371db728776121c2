"""Training throughput of luong_lit on the main job, over a window of optimizer steps.

Runs ``python -m luong_lit.train`` code (same config, same LightningModule, same data
pipeline) for ``warmup + steps`` steps without validation or checkpoints, and prints one
JSON line: non-pad target tokens (``</s>`` included) per wall second over the last
``steps`` steps.

    python benchmarks/ours_window.py --steps 200 --warmup 20 [overrides...]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import lightning as L

REPO = Path(__file__).resolve().parents[1]


class Window(L.Callback):
    def __init__(self, warmup: int) -> None:
        self.warmup, self.t0, self.tokens, self.t1 = warmup, None, 0, None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = trainer.global_step
        if step == self.warmup:
            self.t0, self.tokens = time.perf_counter(), 0
        elif step > self.warmup:
            self.tokens += batch.num_tgt_tokens
            self.t1 = time.perf_counter()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    from hydra import compose, initialize_config_dir

    from luong_lit.train import build

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[
            "logger=none", "paths.output_dir=" + os.environ.get("TMPDIR", "/tmp") + "/ours_window",
            f"+trainer.max_steps={args.warmup + args.steps}", "+trainer.limit_val_batches=0",
            "trainer.enable_checkpointing=false", "trainer.enable_progress_bar=false", "~callbacks",
            *args.overrides])
    from luong_lit.runtime import configure_cpu_from

    configure_cpu_from(cfg)
    dm, model, trainer = build(cfg)
    window = Window(args.warmup)
    trainer.callbacks.append(window)
    trainer.fit(model, dm)
    dt = window.t1 - window.t0
    print(json.dumps({"tgt_tok_per_s": window.tokens / dt, "steps": args.steps, "seconds": dt,
                      "tokens": window.tokens}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
