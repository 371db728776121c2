"""Seconds from a signal to the exit of a two-rank data-parallel run (gloo, on the CPU), at each
moment a signal may come, and from a rank's ``kill -9`` to the survivor's exit.

    python -m scripts.benchmarks.stop_times [--out logs/stop_times]   # nothing else running

Each case starts a toy run on two ranks (``trainer=ddp``, 16 units, a 600-sentence test set
decoded with beam 8), waits for its moment in the run's log, signals rank 1 alone, and times the
run's exit: ``setup`` (rank 1 has begun, its data not set up), ``training`` (step 5),
``validation`` (the second validation's beam decoding), ``test`` (the final test's decoding),
and ``kill -9`` of rank 1 at step 5. A table of the exit status, the seconds and the line the
run ended with.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch

WORDS = "a b c d e f g h i j".split()


def corpus(root: Path, name: str, n: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) for _ in range(n)]
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{name}.src").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / f"{name}.tgt").write_text("\n".join(x.upper() for x in lines) + "\n", "utf-8")
    return root / f"{name}.src", root / f"{name}.tgt"


def command(data: Path, run: Path) -> list[str]:
    sizes = (("train", 480, 1), ("dev", 40, 2), ("test", 600, 3))
    (ts, tt), (ds, dt), (es, et) = (corpus(data, n, k, s) for n, k, s in sizes)
    args = [f"data.train.src={ts}", f"data.train.tgt={tt}", f"data.dev.src={ds}",
            f"data.dev.tgt={dt}", f"+data.test.toy.src={es}", f"+data.test.toy.tgt={et}",
            "data=files", "data.batch_size=8", "data.eval_batch_size=8", "model.net.embed_size=16",
            "model.net.hidden_size=16", "model.net.num_layers=2", "logger=csv", "threads=1",
            "trainer.enable_progress_bar=false", "callbacks.attention_heatmaps.every_n_epochs=0",
            "trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2",
            "trainer.max_epochs=2", "callbacks.checkpoint.every_n_train_steps=1",
            "callbacks.beam_bleu.beam=8", "callbacks.beam_bleu.batch_size=4",
            "callbacks.beam_bleu.every_n_epochs=1", "callbacks.progress.every_n_seconds=0.01",
            f"hydra.run.dir={run}"]  # fmt: skip
    return [sys.executable, "-m", "luong_lit", "train", *args]


def rank_one(main: subprocess.Popen) -> int:
    while main.poll() is None:
        found = subprocess.run(["pgrep", "-P", str(main.pid)], capture_output=True, text=True)
        for pid in found.stdout.split():
            if b"LOCAL_RANK=1" in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                return int(pid)
        time.sleep(0.05)
    raise RuntimeError("rank 1 never started")


def step(run: Path) -> int:
    try:
        return int(torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["global_step"])
    except Exception:  # noqa: BLE001 - not written yet
        return -1


def wait(proc, until) -> None:
    while proc.poll() is None and not until():
        time.sleep(0.02)


def said(log: Path, text: str, count: int = 1):
    return lambda: log.is_file() and log.read_text(errors="replace").count(text) >= count


MOMENTS = {
    "setup": lambda run: lambda: (run / "train.rank1.log").is_file(),
    "training": lambda run: lambda: step(run) >= 5,
    "validation": lambda run: said(run / "train.log", "validation: beam-8 BLEU: ", 2),
    "test": lambda run: said(run / "train.log", "test toy: beam-8 BLEU: "),
    "kill -9": lambda run: lambda: step(run) >= 5,
}


def case(moment: str, out: Path) -> tuple[str, int, float, str]:
    run = out / moment.replace(" ", "_")
    shutil.rmtree(run, ignore_errors=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.Popen(command(out / "data", run), env=env, stderr=subprocess.PIPE, text=True)
    other = rank_one(proc)
    wait(proc, MOMENTS[moment](run))
    sent = time.time()
    os.kill(other, signal.SIGKILL if moment == "kill -9" else signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    took = time.time() - sent
    last = [x for x in err.splitlines() if x.strip()][-1:] or [""]
    return moment, proc.returncode, took, last[0][:110]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("logs/stop_times"))
    args = ap.parse_args()
    rows = [case(m, args.out) for m in MOMENTS]
    print("| moment | exit status | seconds to exit | the run's last line |")
    print("| --- | ---: | ---: | --- |")
    for moment, code, took, line in rows:
        print(f"| {moment} | {code} | {took:.1f} | {line} |")


if __name__ == "__main__":
    main()
