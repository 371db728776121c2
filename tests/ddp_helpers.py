"""What the data-parallel tests share: the recipe of a two-rank run, its command, its end, its
checkpoint's step and weights, and the process of its rank 1."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import torch
from conftest import REPO, run_env, tiny_overrides

#: the paper's SGD and schedule with dropout: masks and rates a resume must continue exactly
RECIPE = ["dropout=0.2", "optim=sgd_paper", "schedule=halving", "model.scheduler.after=1",
          "model.net.hidden_size=16", "model.net.embed_size=16", "threads=1", "logger=csv",
          "test_after_training=false", "callbacks.checkpoint.every_n_train_steps=1"]  # fmt: skip
TWO_RANKS = ["trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2"]


def command(corpus, run: Path, *extra: str) -> list[str]:
    args = [*tiny_overrides(corpus), *RECIPE, *TWO_RANKS, f"hydra.run.dir={run}", *extra]
    return [sys.executable, "-m", "luong_lit", "train", *args]


def finished(cmd: list[str]) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, cwd=REPO, env=run_env(), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def weights(run: Path) -> dict[str, torch.Tensor]:
    return torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["state_dict"]


def step_of(run: Path) -> int:
    try:
        return int(torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["global_step"])
    except Exception:  # noqa: BLE001 - not written yet, or being replaced
        return -1


def rank_one(main: subprocess.Popen) -> int:
    """The process of rank 1, which Lightning starts as a child of rank 0."""
    deadline = time.time() + 120
    while time.time() < deadline:
        found = subprocess.run(["pgrep", "-P", str(main.pid)], capture_output=True, text=True)
        for pid in found.stdout.split():
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            if b"LOCAL_RANK=1" in environ:
                return int(pid)
        time.sleep(0.1)
    raise AssertionError("rank 1 never started")
