"""The paper's model for minutes on the full-size store: steady speed and memory, and a resume.

    python -m scripts.benchmarks.scale corpus --pairs 4500000 --out CORPUS  # once (a minute)
    python -m scripts.gpu.long_run --corpus CORPUS --out DIR --steps 4000 --resume-at 3750

Trains ``experiment=wmt14_sample_local_p`` (4x1000, local-p general, input feeding, dropout,
batch 128, 50K vocabularies) on the corpus of ``scripts.benchmarks.scale`` with ``trainer=gpu``
bf16-mixed and the captured step, ``--steps`` optimizer steps, writing ``last.ckpt`` every
``--every`` steps. The run also keeps its checkpoint of step ``--resume-at`` (a checkpoint
callback of its own); a second run resumes from it to ``--steps``. The store is prepared first
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
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from luong_lit.analysis.figures import read_metrics
from scripts.benchmarks.scale import overrides

REPO = Path(__file__).resolve().parents[2]


def command(args, run_dir: Path, *extra: str) -> list[str]:
    """The training command; the unbroken run also keeps its checkpoint of ``--resume-at``."""
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
        f"trainer.max_steps={args.steps}",
        "trainer.max_epochs=1",
        "trainer.log_every_n_steps=10",
        "trainer.enable_progress_bar=false",
        "trainer.limit_val_batches=0",
        "test_after_training=false",
        "callbacks.greedy_bleu.every_n_epochs=0",
        "callbacks.attention_heatmaps.every_n_epochs=0",
        f"callbacks.checkpoint.every_n_train_steps={args.every}",
        f"callbacks.throughput.every_n_steps={args.window}",
        "logger=csv",
        f"hydra.run.dir={run_dir}",
    ]
    return [sys.executable, "-m", "luong_lit", "train", *ovr, *extra]


def run(cmd: list[str], log: Path) -> float:
    t0 = time.time()
    with open(log, "w") as fh:
        res = subprocess.run(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)
    if res.returncode:
        sys.exit(f"exit {res.returncode}: see {log}")
    return time.time() - t0


def column(metrics: dict, name: str) -> dict[int, float]:
    return dict(metrics.get(name, []))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--corpus", type=Path, required=True, help="scripts.benchmarks.scale corpus --out"
    )
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--resume-at", type=int, default=3750)
    ap.add_argument("--every", type=int, default=1000, help="last.ckpt every N steps")
    ap.add_argument("--window", type=int, default=900, help="throughput window, steps")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = ap.parse_args(argv)
    if not 0 < args.resume_at < args.steps:
        ap.error("--resume-at must be below --steps")
    args.corpus, out = args.corpus.resolve(), args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    env_cache = os.environ.setdefault("LUONG_LIT_CACHE", str(args.corpus / "cache"))
    unbroken, resumed = out / "unbroken", out / "resumed"
    keep = unbroken / "kept"  # a checkpoint callback of its own, at --resume-at only
    kept = [
        "+callbacks.keep._target_=lightning.pytorch.callbacks.ModelCheckpoint",
        f"+callbacks.keep.dirpath={keep}",
        f"+callbacks.keep.every_n_train_steps={args.resume_at}",
        "+callbacks.keep.save_top_k=-1",
        "+callbacks.keep.filename='step{step}'",  # quoted for Hydra: stepN.ckpt
        "+callbacks.keep.auto_insert_metric_name=false",
    ]
    prepare = [a if a != "train" else "prepare" for a in command(args, unbroken)]
    prep_s = run([a for a in prepare if not a.startswith("hydra.")], out / "prepare.log")
    wall = run(command(args, unbroken, *kept), out / "unbroken.log")
    copy = keep / f"step{args.resume_at}.ckpt"
    if not copy.is_file():
        sys.exit(f"{copy} was not written")
    run(command(args, resumed, f"ckpt_path={copy}"), out / "resumed.log")
    a, b = read_metrics(unbroken), read_metrics(resumed)
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
