"""The design card's sweep, one launcher after another: wall time and each job's span.

    python -m scripts.benchmarks.sweep_wall --out DIR                    # basic, then joblib
    python -m scripts.benchmarks.sweep_wall --out DIR --gpu --launchers basic,joblib \
        --jobs-per-gpu 2,1

Runs ``python -m luong_lit train -m attention=local_p,global score=dot,general`` (the main
job's model, short runs: ``--steps`` training batches, a few dev batches, no test) with each
launcher in turn, side by side in one process tree, and prints one JSON line per launcher: its
wall time and, from each job's ``job.json``, the job's device, threads and start/end times
(seconds from the sweep's start), and the most jobs that ran at once on each device.
``--jobs-per-gpu 2,1`` runs each launcher once per value of ``sweep.jobs_per_gpu`` (joblib's
``n_jobs`` then follows from it unless ``--jobs`` is given). The corpus store is prepared first,
so no launcher pays for it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SWEEP = ["attention=local_p,global", "score=dot,general"]
LAUNCHERS = {
    "basic": [],
    "joblib": ["hydra/launcher=joblib"],
    "submitit_local": ["hydra/launcher=submitit_local"],
}


def most_at_once(jobs: list[dict]) -> dict[str, int]:
    """Per device, the most jobs that ran at once: ``jobs`` are records with ``device``,
    ``start_s`` and ``end_s`` (this benchmark's jobs), each running over [start, end)."""
    most: dict[str, int] = {}
    for dev in {j["device"] for j in jobs}:
        mine = [j for j in jobs if j["device"] == dev]
        most[dev] = max(sum(o["start_s"] <= j["start_s"] < o["end_s"] for o in mine) for j in mine)
    return most


def short_run(steps: int, gpu: bool) -> list[str]:
    runs = [
        "trainer.max_epochs=1",
        f"trainer.limit_train_batches={steps}",
        "trainer.limit_val_batches=10",
        "trainer.enable_progress_bar=false",
        "test_after_training=false",
        "callbacks.attention_heatmaps.every_n_epochs=0",
        "callbacks.greedy_bleu.every_n_epochs=0",
        "logger=csv",
    ]
    return runs + (["trainer=gpu"] if gpu else [])


def spans(sweep_dir: Path, t0: float) -> list[dict]:
    out = []
    for job in sorted(sweep_dir.glob("*/job.json")):
        rec = json.loads(job.read_text())
        out.append(
            {
                "job": rec.get("num"),
                "device": rec.get("device", "cpu"),
                "threads": rec.get("threads"),
                "start_s": round(rec["start"] - t0, 1),
                "end_s": round(rec["end"] - t0, 1),
            }
        )
    return sorted(out, key=lambda r: r["job"])


def run_sweep(name: str, args, out: Path, per_gpu: int | None) -> dict:
    sweep_dir = out / (name if per_gpu is None else f"{name}_per_gpu{per_gpu}")
    extra = list(LAUNCHERS[name])
    if name == "joblib" and args.jobs:
        extra.append(f"hydra.launcher.n_jobs={args.jobs}")
    if per_gpu is not None:
        extra.append(f"sweep.jobs_per_gpu={per_gpu}")
    cmd = [sys.executable, "-m", "luong_lit", "train", "-m", *SWEEP]
    cmd += short_run(args.steps, args.gpu) + extra + [f"hydra.sweep.dir={sweep_dir}"]
    t0 = time.time()
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.time() - t0
    if res.returncode != 0:
        sys.exit(f"{name} failed:\n{res.stderr[-3000:]}")
    jobs = spans(sweep_dir, t0)
    return {
        "launcher": name,
        "jobs_per_gpu": per_gpu,
        "wall_s": round(wall, 1),
        "most_at_once": most_at_once(jobs),
        "jobs": jobs,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="sweep directories go here")
    ap.add_argument("--steps", type=int, default=150, help="training batches per job")
    ap.add_argument(
        "--jobs", type=int, default=None, help="joblib's n_jobs (default: the config's)"
    )
    ap.add_argument(
        "--jobs-per-gpu", default=None, help="comma-separated sweep.jobs_per_gpu values"
    )
    ap.add_argument("--gpu", action="store_true", help="trainer=gpu (the pool shares the GPUs)")
    ap.add_argument("--launchers", default="basic,joblib", help=f"of {','.join(LAUNCHERS)}")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "luong_lit", "prepare"], cwd=REPO, check=True)
    per_gpu = [int(n) for n in args.jobs_per_gpu.split(",")] if args.jobs_per_gpu else [None]
    names = args.launchers.split(",")
    results = [run_sweep(name, args, out, n) for n in per_gpu for name in names]
    for r in results:
        print(json.dumps(r))
    (out / "sweep_wall.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
