"""The stop matrix's machinery (``tests/test_stop_matrix.py``, and its cells on several ranks in
``tests/test_ddp_stops.py``): its cells, its toy corpus, a run trained with snapshots of its
folder at four moments, each resumed in the run's place, and the comparison of ends."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import torch
from conftest import compose_cfg, tiny_overrides, write_corpus

MOMENTS = ("mid_epoch", "epoch_end", "validation", "test")
#: what may differ between two runs of the same work: wall-clock figures
TIMING = ("per_s", "gpu_", "elapsed")

#: cell -> (overrides, how the unbroken run ends): each schedule once, EMA, early stopping and
#: token batches spread over them; each early stop comes after the stops taken in epoch 1
CELLS = {
    "halving, EMA, early stopping": ([
        "optim=sgd_paper", "schedule=halving", "model.scheduler.after=1",
        "callbacks.ema.decay=0.8", "callbacks.early_stopping.patience=2",
        "callbacks.early_stopping.min_delta=5",
    ], "early stopping"),
    "plateau twice an epoch, early stopping, token batches, background writes": ([
        "optim=sgd_paper", "schedule=plateau", "model.scheduler.threshold=0.01",
        "trainer.val_check_interval=0.5", "callbacks.early_stopping.patience=3",
        "callbacks.early_stopping.min_delta=5", "data.max_tokens=40", "data.max_len=12",
        "checkpoint_writes=background",
    ], "early stopping"),
    "halving after plateau, EMA": ([
        "optim=sgd_paper", "schedule=halving_after_plateau", "model.scheduler.halvings=1",
        "model.scheduler.threshold=0.2", "callbacks.ema.decay=0.7",
    ], "schedule done"),
    "linear decay, EMA, token batches": ([
        "optim=adam", "schedule=linear_decay", "model.scheduler.epochs=2",
        "callbacks.ema.decay=0.9", "data.max_tokens=48", "data.max_len=12",
    ], "max_epochs"),
    "constant, early stopping": ([
        "optim=adam", "schedule=constant", "callbacks.early_stopping.patience=2",
        "callbacks.early_stopping.min_delta=5",
    ], "early stopping"),
}  # fmt: skip
EPOCHS = 4


def ended_by(state: dict) -> str:
    """What ended an unbroken run: early stopping, its schedule, or ``trainer.max_epochs``."""
    last = state["last"]
    stopping = [v for k, v in last["callbacks"].items() if k.startswith("EarlyStopping")]
    if stopping and stopping[0]["stopping_reason"]:
        return "early stopping"
    if any(s.get("finished") for s in last["lr_schedulers"]):
        return "schedule done"
    return "max_epochs" if last["epoch"] == EPOCHS - 1 else "?"


def matrix_files(root: Path) -> dict[str, dict[str, str]]:
    """The matrix's toy corpus under ``root``: 96 pairs to train on, 16 to validate, 12 to test."""
    return {
        "train": write_corpus(root, "train", 96, 21),
        "dev": write_corpus(root, "dev", 16, 22),
        "test": write_corpus(root, "test", 12, 23),
    }


def overrides(corpus, cell: str) -> list[str]:
    test = corpus["test"]
    return [
        *tiny_overrides(corpus), "data.eval_batch_size=4", f"trainer.max_epochs={EPOCHS}",
        "dropout=0.2", "logger=csv", "trainer.log_every_n_steps=1",
        "callbacks.checkpoint.every_n_train_steps=1", "callbacks.beam_bleu.beam=2",
        f"+data.test.toy.src={test['src']}", f"+data.test.toy.tgt={test['tgt']}", *CELLS[cell][0],
    ]  # fmt: skip


def train_in(run_dir: Path, args: list[str]) -> None:
    from luong_lit.training.run import train

    train(compose_cfg(args, run_dir))


def rows(run_dir: Path) -> list[dict]:
    with open(run_dir / "csv" / "metrics.csv", newline="") as fh:
        found = list(csv.DictReader(fh))
    return [{k: v for k, v in r.items() if not any(t in k for t in TIMING)} for r in found]


def end_state(run_dir: Path) -> dict:
    """What a run ends with, as compared: its last and best checkpoints (but for the loops'
    own counters), its logged rows and ``results.json``."""
    last = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    best = torch.load(run_dir / "checkpoints" / "best.ckpt", map_location="cpu", weights_only=True)
    kept = ("state_dict", "current_model_state", "averaging_state", "optimizer_states",
            "lr_schedulers", "callbacks", "epoch", "global_step")  # fmt: skip
    return {
        "last": {k: last[k] for k in kept if k in last},
        "best": {k: best[k] for k in ("state_dict", "global_step")},
        "rows": rows(run_dir),
        "lr": [(r["step"], r["train/lr"]) for r in rows(run_dir) if r.get("train/lr")],
        "results": json.loads((run_dir / "results.json").read_text()),
    }


def assert_same(a, b, where: str = "", rel: float = 0.0) -> None:
    """``a`` and ``b`` equal, tensor for tensor and value for value; ``rel``: logged figures
    (strings of floats) may differ by that much, relatively."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), (where, sorted(a), sorted(b))
        for key in (k for k in a if not any(t in str(k) for t in TIMING)):
            assert_same(a[key], b[key], f"{where}/{key}", rel)
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (where, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]", rel)
    elif rel and isinstance(a, str) and "/rows" in where and a and b:
        assert float(a) == pytest.approx(float(b), rel=rel), (where, a, b)
    else:
        assert a == b, (where, a, b)


def check_cell(corpus, cell: str, tmp_path: Path, strategy: tuple[str, ...] = (),
               rel: float = 0.0) -> None:  # fmt: skip
    run, shots = tmp_path / "run", tmp_path / "shots"
    args = [*overrides(corpus, cell), *strategy]
    snap = ["+callbacks.snapshot._target_=signal_helpers.Snapshot",
            f"+callbacks.snapshot.run_dir={run}", f"+callbacks.snapshot.to={shots}"]  # fmt: skip
    train_in(run, [*args, *snap])
    unbroken = end_state(run)
    assert ended_by(unbroken) == CELLS[cell][1]
    if "EMA" in cell:  # the averaged weights are the checkpoints', the raw ones beside them
        assert not torch.equal(
            unbroken["last"]["state_dict"]["net.decoder.W_c.weight"],
            unbroken["last"]["current_model_state"]["net.decoder.W_c.weight"],
        )
    assert sorted(p.name for p in shots.iterdir()) == sorted(MOMENTS)
    for moment in MOMENTS:
        shutil.rmtree(run)
        shutil.copytree(shots / moment, run)
        train_in(run, [*args, "ckpt_path=last"])
        assert_same(unbroken, end_state(run), f"{cell}, stopped {moment}", rel)
