"""Nothing lost: a run killed (``kill -9``) or stopped (SIGTERM) in the middle of epoch 2, or
stopped during epoch 2's validation, and resumed with ``ckpt_path=last`` ends with the unbroken
run's weights, tensor for tensor, and a CSV log that holds every epoch's validation once, with
the unbroken run's figures; a checkpoint that cannot be written leaves the last one."""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import tiny_overrides, write_corpus

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    return {
        "train": write_corpus(root, "train", 480, 11),
        "dev": write_corpus(root, "dev", 40, 12),  # 5 batches: a validation can be cut short
    }


PAPER_SCHEDULE = ("optim=sgd_paper", "schedule=halving", "model.scheduler.after=1")
MAIN_JOB_SCHEDULE = ("optim=adam", "schedule=linear_decay")  # m30k_small's


def command(corpus, run_dir: Path, *extra: str, schedule=PAPER_SCHEDULE) -> list[str]:
    overrides = tiny_overrides(corpus) + [
        "trainer.max_epochs=3",
        "dropout=0.3",
        *schedule,
        "test_after_training=false",
        "logger=csv",
        "threads=1",
        "model.net.hidden_size=32",
        "model.net.embed_size=32",
        "callbacks.checkpoint.every_n_train_steps=1",
        "callbacks.throughput.every_n_steps=2",  # a resumed epoch's callbacks run as well
        f"hydra.run.dir={run_dir}",
    ]
    return [sys.executable, "-m", "luong_lit", "train", *overrides, *extra]


def env() -> dict[str, str]:
    tests = str(Path(__file__).resolve().parent)  # signal_helpers, for the validation stop
    path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}


def step_of(ckpt: Path) -> int:
    try:
        return int(torch.load(ckpt, map_location="cpu", weights_only=True)["global_step"])
    except Exception:  # noqa: BLE001 - not written yet, or being replaced
        return -1


def stop_during_epoch_2(
    corpus,
    run_dir: Path,
    signum: int,
    steps_per_epoch: int = 60,
    extra=(),
    schedule=PAPER_SCHEDULE,
    target: int | None = None,
) -> subprocess.Popen:
    """Start a run and send ``signum`` once its checkpoint shows step ``target`` or later (by
    default a random step of epoch 2; with checkpoints at epoch ends only, give
    ``steps_per_epoch``: the signal then comes as epoch 2 starts)."""
    if target is None:
        target = random.Random(signum).randrange(steps_per_epoch + 1, 2 * steps_per_epoch - 5)
    proc = subprocess.Popen(
        command(corpus, run_dir, *extra, schedule=schedule),
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ckpt = run_dir / "checkpoints" / "last.ckpt"
    deadline = time.time() + 300
    while step_of(ckpt) < target and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signum)
    proc.wait(timeout=120)
    step = step_of(ckpt)
    assert steps_per_epoch <= step < 2 * steps_per_epoch, f"stopped at step {step}, not in epoch 2"
    return proc


def resume(corpus, run_dir: Path, extra=(), schedule=PAPER_SCHEDULE) -> None:
    """Resume the stopped run in ``run_dir`` with ``ckpt_path=last``, to its end."""
    res = subprocess.run(
        command(corpus, run_dir, *extra, "ckpt_path=last", schedule=schedule),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr[-2000:]


def metrics_rows(run_dir: Path) -> list[dict]:
    with open(run_dir / "csv" / "metrics.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def unbroken(corpus, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("unbroken")
    res = subprocess.run(
        command(corpus, run_dir), cwd=REPO, env=env(), capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return run_dir


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_stopped_in_epoch_2_and_resumed_equals_the_unbroken_run(corpus, unbroken, tmp_path, signum):
    proc = stop_during_epoch_2(corpus, tmp_path, signum)
    if signum == signal.SIGTERM:  # a clean stop: the step finished, saved, said so, no traceback
        assert proc.returncode == 128 + signal.SIGTERM
        err = proc.stderr.read()
        assert (
            "interrupted by signal 15" in err and "ckpt_path=last" in err and "Traceback" not in err
        )
    else:
        assert proc.returncode == -signal.SIGKILL
    resume(corpus, tmp_path)
    a = torch.load(unbroken / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=True)
    assert a["global_step"] == b["global_step"] == 3 * 60
    for key, value in a["state_dict"].items():  # same batches, dropout masks and learning rates
        assert torch.equal(b["state_dict"][key], value), key
    rows = metrics_rows(tmp_path)
    epochs = [r["epoch"] for r in rows if r.get("val/ppl")]
    assert epochs == ["0", "1", "2"]  # every epoch's validation exactly once
    steps = [r["step"] for r in rows if r.get("train/loss")]
    assert (
        len(steps)
        == len(set(steps))
        == len([r for r in metrics_rows(unbroken) if r.get("train/loss")])
    )


#: setting -> (steps per epoch, overrides, schedule, the checkpoint step the kill waits for)
SHORT_EPOCHS = {
    "limit 40 batches, checkpoints at epoch ends only, the main job's schedule": (
        40,
        ["+trainer.limit_train_batches=40", "callbacks.checkpoint.every_n_train_steps=0"],
        MAIN_JOB_SCHEDULE,
        40,  # epoch 1's: the kill comes in epoch 2, which resumes from its start
    ),
    "limit a fraction, validation twice an epoch": (
        30,
        ["+trainer.limit_train_batches=0.5", "+trainer.val_check_interval=0.5"],
        PAPER_SCHEDULE,
        None,  # a random step of epoch 2
    ),
}


@pytest.mark.parametrize("setting", list(SHORT_EPOCHS))
def test_short_epochs_killed_in_epoch_2_resume_as_the_unbroken_run(corpus, tmp_path, setting):
    """Epochs cut short (``limit_train_batches``, as for a large corpus) and validated in their
    middle (``val_check_interval``): a run killed in epoch 2 goes on as the unbroken one."""
    steps, extra, schedule, target = SHORT_EPOCHS[setting]
    full = tmp_path / "unbroken"
    res = subprocess.run(command(corpus, full, *extra, schedule=schedule), cwd=REPO, env=env(),
                         capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    stop_during_epoch_2(corpus, tmp_path / "run", signal.SIGKILL, steps, extra, schedule, target)
    resume(corpus, tmp_path / "run", extra, schedule)
    a = torch.load(full / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(tmp_path / "run" / "checkpoints" / "last.ckpt", weights_only=True)
    assert a["global_step"] == b["global_step"] == 3 * steps
    for key, value in a["state_dict"].items():
        assert torch.equal(b["state_dict"][key], value), key
    dev = [(r["epoch"], r["step"], r["val/ppl"]) for r in metrics_rows(full) if r.get("val/ppl")]
    got = [(r["epoch"], r["step"], r["val/ppl"]) for r in metrics_rows(tmp_path / "run")]
    assert [x for x in got if x[2]] == dev, ([x for x in got if x[2]], dev)


def test_stopped_during_validation_validates_that_epoch_again(corpus, unbroken, tmp_path):
    stop = "+callbacks.stop._target_=signal_helpers.SigtermInValidation"
    res = subprocess.run(
        command(corpus, tmp_path, stop), cwd=REPO, env=env(), capture_output=True, text=True
    )
    assert res.returncode == 128 + signal.SIGTERM, res.stderr[-2000:]
    assert [r["epoch"] for r in metrics_rows(tmp_path) if r.get("val/ppl")] == ["0"]
    resume(corpus, tmp_path)
    dev = [(r["epoch"], r["val/ppl"]) for r in metrics_rows(tmp_path) if r.get("val/ppl")]
    assert dev == [(r["epoch"], r["val/ppl"]) for r in metrics_rows(unbroken) if r.get("val/ppl")]
    assert [e for e, _ in dev] == ["0", "1", "2"]  # epoch 2's validation ran, once
    a = torch.load(unbroken / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=True)
    for key, value in a["state_dict"].items():
        assert torch.equal(b["state_dict"][key], value), key


def test_a_checkpoint_that_cannot_be_written_keeps_the_previous_one(corpus, tmp_path):
    res = subprocess.run(
        command(
            corpus, tmp_path, "trainer.max_epochs=1", "callbacks.checkpoint.every_n_train_steps=0"
        ),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    last = tmp_path / "checkpoints" / "last.ckpt"
    before = last.read_bytes()
    limited = (
        "import resource, runpy, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({len(before) // 2}, {len(before) // 2}))\n"
        "sys.argv = ['luong_lit'] + sys.argv[1:]\n"
        "runpy.run_module('luong_lit', run_name='__main__')\n"
    )
    args = command(corpus, tmp_path, "trainer.max_epochs=2", "ckpt_path=last")[3:]
    res = subprocess.run(
        [sys.executable, "-c", limited, *args], cwd=REPO, env=env(), capture_output=True, text=True
    )
    assert res.returncode == 2, res.stderr[-2000:]
    error = [line for line in res.stderr.splitlines() if line.startswith("error: ")]
    assert error and f"{last}: cannot write the checkpoint (" in error[0], res.stderr[-2000:]
    assert "the previous checkpoint is kept" in error[0]
    assert "Traceback" not in res.stderr
    assert last.read_bytes() == before and not list(last.parent.glob(".last.ckpt.*"))
