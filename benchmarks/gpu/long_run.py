"""The paper's model for minutes on the full-size store: steady speed and memory, and a resume.

    python -m benchmarks.scale corpus --pairs 4500000 --out CORPUS     # once (about a minute)
    python -m benchmarks.gpu.long_run --corpus CORPUS --out DIR --steps 4000 --resume-at 3750

Trains ``experiment=wmt14_sample_local_p`` (4x1000, local-p general, input feeding, dropout,
batch 128, 50K vocabularies) on the corpus of ``benchmarks.scale`` with ``trainer=gpu``
bf16-mixed and the captured step, ``--steps`` optimizer steps, writing ``last.ckpt`` every
``--every`` steps. While it runs, the checkpoint of step ``--resume-at`` is copied aside; a
second run resumes from that copy to ``--steps``. The store is prepared first
(``python -m luong_lit prepare``, the same overrides), so neither run's clock includes it.
Prints one JSON line: for each throughput window (``--window`` steps, about a minute on an
H100 at the default) the target tokens/s, the peak GPU memory so far and the memory held; the
graphs captured, the run's wall time, and the largest difference between the unbroken and the
resumed run's training losses over the steps after ``--resume-at`` (dropout included: the
checkpoint holds the CUDA generator's state, and capturing draws nothing from it).

``--device cpu`` runs the same plumbing with the fixed-shape step uncaptured and a small
model, to try the script on a small corpus
(``--pairs 20000`` above; ``--steps 40 --resume-at 20 --every 10 --window 10``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import torch

from benchmarks.scale import overrides

REPO = Path(__file__).resolve().parents[2]


def command(args, run_dir: Path, *extra: str) -> list[str]:
    device = (
        ["trainer=gpu", "trainer.precision=bf16-mixed", "engine.graphs=capture"]
        if args.device == "cuda"
        else [
            "trainer=cpu",
            "engine.graphs=static",
            "model.net.hidden_size=64",
            "model.net.embed_size=64",
            "data.vocab_size=2000",
        ]
    )
    ovr = ["experiment=wmt14_sample_local_p", *overrides(args.corpus, "train"), *device]
    ovr += [
        f"+trainer.max_steps={args.steps}",
        "trainer.max_epochs=1",
        "trainer.log_every_n_steps=10",
        "trainer.enable_progress_bar=false",
        "+trainer.limit_val_batches=0",
        "test_after_training=false",
        "callbacks.greedy_bleu.every_n_epochs=0",
        "callbacks.attention_heatmaps.every_n_epochs=0",
        f"callbacks.checkpoint.every_n_train_steps={args.every}",
        f"callbacks.throughput.every_n_steps={args.window}",
        "logger=csv",
        f"hydra.run.dir={run_dir}",
    ]
    return [sys.executable, "-m", "luong_lit", "train", *ovr, *extra]


def step_of(ckpt: Path) -> int:
    try:
        state = torch.load(ckpt, map_location="cpu", weights_only=True, mmap=True)
        return int(state["global_step"])
    except Exception:  # noqa: BLE001 - not written yet, or being replaced
        return -1


def keep_checkpoint(ckpt: Path, step: int, copy: Path, done: threading.Event) -> None:
    """Copy ``ckpt`` to ``copy`` once it holds ``step`` (checked again after copying). The
    file is read only when its time or size changed, not to take the run's time."""
    seen = None
    while not done.is_set():
        stat = ckpt.stat() if ckpt.exists() else None
        key = stat and (stat.st_mtime_ns, stat.st_size)
        if key and key != seen:
            seen = key
            if step_of(ckpt) == step:
                shutil.copyfile(ckpt, copy)
                if step_of(copy) == step:
                    return
                seen = None  # replaced while copied: look again
        time.sleep(0.05)


def run(cmd: list[str], log: Path) -> float:
    t0 = time.time()
    with open(log, "w") as fh:
        res = subprocess.run(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)
    if res.returncode:
        sys.exit(f"exit {res.returncode}: see {log}")
    return time.time() - t0


def rows(run_dir: Path) -> list[dict]:
    with open(run_dir / "csv" / "metrics.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def column(table: list[dict], name: str) -> dict[int, float]:
    return {int(r["step"]): float(r[name]) for r in table if r.get(name)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, required=True, help="benchmarks.scale corpus --out")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--resume-at", type=int, default=3750)
    ap.add_argument("--every", type=int, default=250, help="last.ckpt every N steps")
    ap.add_argument("--window", type=int, default=900, help="throughput window, steps")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = ap.parse_args(argv)
    if args.resume_at % args.every or not 0 < args.resume_at < args.steps:
        ap.error("--resume-at must be a multiple of --every, below --steps")
    args.corpus, out = args.corpus.resolve(), args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    env_cache = os.environ.setdefault("LUONG_LIT_CACHE", str(args.corpus / "cache"))
    unbroken, resumed, copy = out / "unbroken", out / "resumed", out / "resume_from.ckpt"
    done = threading.Event()
    watcher = threading.Thread(
        target=keep_checkpoint,
        args=(unbroken / "checkpoints" / "last.ckpt", args.resume_at, copy, done),
        daemon=True,
    )
    prepare = [a if a != "train" else "prepare" for a in command(args, unbroken)]
    prep_s = run([a for a in prepare if not a.startswith("hydra.")], out / "prepare.log")
    watcher.start()
    wall = run(command(args, unbroken), out / "unbroken.log")
    done.set()
    watcher.join()
    if step_of(copy) != args.resume_at:
        sys.exit(f"the checkpoint of step {args.resume_at} was not caught")
    run(command(args, resumed, f"ckpt_path={copy}"), out / "resumed.log")
    a, b = rows(unbroken), rows(resumed)
    la, lb = column(a, "train/loss"), column(b, "train/loss")
    after = sorted(s for s in lb if s > args.resume_at and s in la)
    report = {
        "steps": args.steps,
        "prepare_s": round(prep_s, 1),
        "wall_s": round(wall, 1),
        "cache": env_cache,
        "tok_per_s": column(a, "train/tgt_tok_per_s"),
        "gpu_peak_mib": column(a, "train/gpu_peak_mib"),
        "gpu_mib": column(a, "train/gpu_mib"),
        "graphs": max(column(a, "train/graphs").values(), default=0),
        "resumed_steps_compared": len(after),
        "max_abs_loss_diff": max((abs(la[s] - lb[s]) for s in after), default=None),
        "losses": {s: [la[s], lb[s]] for s in after[:5]},
    }
    (out / "long_run.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
