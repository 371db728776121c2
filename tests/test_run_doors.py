"""A run you can trust, as a user meets it: a run's folder is never trained over by accident, a
finished run says it is finished, a stopped sweep resumes whole, and a run's log says what
happened to it (real commands, tiny runs)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from conftest import REPO, run_cli, run_env, run_here, tiny_overrides, write_corpus


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def tiny(corpus, *extra: str) -> list[str]:
    return ["train", *tiny_overrides(corpus), "threads=1", "test_after_training=false", *extra]


def test_a_new_run_is_refused_over_a_run_and_overwrite_replaces_it(toy_corpus, tmp_path):
    run = tmp_path / "run"
    first = run_here([*tiny(toy_corpus, "trainer.max_steps=3", "seed=1"), f"hydra.run.dir={run}"])
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    before = digest(run)
    again = run_here([*tiny(toy_corpus, "trainer.max_steps=5"), f"hydra.run.dir={run}"])
    err = again.stderr.decode()
    assert again.returncode == 2 and err.count("error: ") == 1 and "Traceback" not in err
    assert f"{run} holds a finished run (results.json)" in err and "overwrite=true" in err
    assert digest(run) == before  # its checkpoint and its .hydra/overrides.yaml untouched
    over = [*tiny(toy_corpus, "trainer.max_steps=5"), f"hydra.run.dir={run}", "overwrite=true"]
    assert run_here(over).returncode == 0
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == 5
    assert "seed=1" not in (run / ".hydra" / "overrides.yaml").read_text()


def test_a_finished_run_resumed_says_so_and_trains_on_only_when_asked(toy_corpus, tmp_path):
    run = tmp_path / "run"
    assert (
        run_here([*tiny(toy_corpus, "trainer.max_epochs=1"), f"hydra.run.dir={run}"]).returncode
        == 0
    )
    last = run / "checkpoints" / "last.ckpt"
    stamp = last.stat().st_mtime_ns
    res = run_here(["train", f"hydra.run.dir={run}", "ckpt_path=last"])
    assert res.returncode == 0 and f"{run} is a finished run" in res.stdout.decode()
    assert last.stat().st_mtime_ns == stamp  # nothing trained, nothing tested again
    more = run_here(["train", f"hydra.run.dir={run}", "ckpt_path=last", "trainer.max_epochs=2"])
    assert more.returncode == 0, more.stderr.decode()[-2000:]
    assert torch.load(last, weights_only=True)["epoch"] == 1


def test_nothing_to_resume_lists_unfinished_runs_only(toy_corpus, tmp_path):
    logs = tmp_path / "logs"
    for name in ("finished", "unfinished"):
        args = tiny(toy_corpus, "trainer.max_steps=2")
        assert run_here([*args, f"hydra.run.dir={logs}/train/runs/{name}"]).returncode == 0
    (logs / "train" / "runs" / "unfinished" / "results.json").unlink()  # as if killed
    res = run_here(
        ["train", f"paths.log_dir={logs}", f"hydra.run.dir={tmp_path}/x", "ckpt_path=last"]
    )
    err = res.stderr.decode()
    assert res.returncode == 2 and "runs/unfinished" in err and "runs/finished" not in err


def wait_for(path: Path, text: str, proc: subprocess.Popen, seconds: float = 240) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        if path.is_file() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never came in {path}")


def test_a_stopped_sweep_prints_the_sweep_and_resumes_whole(toy_corpus, tmp_path):
    sweep = tmp_path / "sweep"
    args = ["-m", "attention=global,local_m", *tiny(toy_corpus)[1:], "trainer.max_epochs=40",
            "callbacks.checkpoint.every_n_train_steps=1", f"hydra.sweep.dir={sweep}"]  # fmt: skip
    cmd = [sys.executable, "-m", "luong_lit", "train", *args]
    proc = subprocess.Popen(cmd, cwd=REPO, env=run_env(), stderr=subprocess.PIPE, text=True)
    job0 = sweep / "0_attention=global"
    deadline = time.time() + 240
    while not (job0 / "checkpoints" / "last.ckpt").is_file() and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert not (sweep / "1_attention=local_m").exists()  # the sweep stopped at its first job
    printed = shlex.split(err.split("resume the sweep with: ", 1)[1].splitlines()[0])
    assert printed[:4] == ["python", "-m", "luong_lit.train", "-m"]
    assert printed[-1] == f'hydra.sweep.dir="{sweep}"' and "attention=global,local_m" in printed
    assert "interrupted by signal 2" in (job0 / "train.log").read_text()
    shorter = [a for a in printed[4:] if not a.startswith("trainer.max_epochs")]
    res = run_cli(["train", "-m", *shorter, "trainer.max_epochs=2"], stdin="")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "resuming this sweep job from" in (job0 / "train.log").read_text()
    assert (sweep / "1_attention=local_m" / "checkpoints" / "last.ckpt").is_file()
    closing = res.stdout.strip().splitlines()[-1]
    assert closing.startswith("sweep folder: ") and f"python -m luong_lit report {sweep}" in closing


def test_a_signal_during_the_final_test_stops_it_and_the_resume_tests_alone(toy_corpus, tmp_path):
    """A test set of 2,000 sentences decoded one at a time with a wide beam: long enough to be
    stopped."""
    run = tmp_path / "run"
    big = write_corpus(tmp_path, "big", 2000, 5)
    test = [f"+data.test.big.src={big['src']}", f"+data.test.big.tgt={big['tgt']}",
            "callbacks.beam_bleu.beam=12", "callbacks.beam_bleu.batch_size=1",
            "callbacks.progress.every_n_seconds=0.01"]  # fmt: skip
    args = [*tiny(toy_corpus, "trainer.max_steps=2", *test), f"hydra.run.dir={run}"]
    args = [a.replace("test_after_training=false", "test_after_training=true") for a in args]
    proc = subprocess.Popen([sys.executable, "-m", "luong_lit", *args], cwd=REPO, env=run_env(),
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    wait_for(run / "train.log", "/2,000 sentences", proc)
    step = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["global_step"]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "during the final test: training is complete" in err
    assert not (run / "results.json").exists() and "Traceback" not in err
    assert "during the final test" in (run / "train.log").read_text()
    res = run_cli(["train", f"hydra.run.dir={run}", "ckpt_path=last"], timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "big" in json.loads((run / "results.json").read_text())
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == step


# ------------------------------------------------------------------ what a run shows
class Bar:
    """What the progress bar hooks read of a trainer."""

    def __init__(self, step: int, epoch: int, total: float = 90, epochs: int = 3) -> None:
        self.global_step, self.current_epoch = step, epoch
        self.estimated_stepping_batches, self.max_epochs = total, epochs
        self.accumulate_grad_batches = 1


def test_the_bar_counts_the_runs_steps_not_one_epochs_batches():
    from luong_lit.training.progress import RunProgressBar

    bar = RunProgressBar(refresh_rate=1)
    bar.train_progress_bar = bar.init_train_tqdm()
    bar.train_progress_bar.disable = False
    trainer = Bar(step=40, epoch=1)  # resumed in epoch 2 of 3, 30 steps an epoch
    bar.on_train_epoch_start(trainer)
    assert (bar.train_progress_bar.n, bar.train_progress_bar.total) == (40, 90)
    assert bar.train_progress_bar.desc.startswith("epoch 2/3")
    trainer.global_step, trainer.current_epoch = 61, 2
    bar.on_train_epoch_start(trainer)  # a new epoch does not start the count again
    assert bar.train_progress_bar.n == 40 and bar.train_progress_bar.desc.startswith("epoch 3/3")
    bar.train_progress_bar.close()


def test_the_bar_shows_the_training_loss_read_as_it_is_redrawn():
    """The loss is logged off Lightning's bar, which would read it from the device after every
    step: the bar reads it itself when it is redrawn, first of the figures it shows."""
    from luong_lit.training.progress import RunProgressBar

    trainer = Bar(step=5, epoch=0)
    trainer.loggers, trainer.progress_bar_metrics = [], {"val/ppl": 9.0}
    trainer.callback_metrics = {"train/loss": torch.tensor(2.5), "val/ppl": torch.tensor(9.0)}
    shown = RunProgressBar().get_metrics(trainer, None)
    assert list(shown.items()) == [("train/loss", 2.5), ("val/ppl", 9.0)]


def test_a_resumed_run_counts_its_earlier_time_and_names_the_losss_unit():
    from luong_lit.training.progress import ProgressLog

    first = ProgressLog()
    first._start = time.monotonic() - 100  # trained 100 seconds, then stopped
    later = ProgressLog()
    later.load_state_dict(first.state_dict())
    later._start, later._first_step, later._total, later._unit = time.monotonic(), 5, 10, "/token"
    later._window(later._start, 5)
    line = later.line(Bar(step=5, epoch=0, total=10, epochs=1), time.monotonic())
    assert "elapsed 0:01:4" in line  # 100 seconds, and a little
    later._loss, later._losses = torch.tensor(6.0), 2
    assert "loss/token 3.0000" in later.line(Bar(step=6, epoch=0, total=10), time.monotonic())


def test_a_signal_while_the_folder_is_read_stops_the_run_once_it_is_open(
    toy_corpus, tmp_path, monkeypatch
):
    """SIGTERM while a resumed run reads its ``last.ckpt``: noted, not raised inside the read
    (which would call the checkpoint unreadable); the run stops as the folder is open, before
    training, with the resume command, and that command then resumes it."""
    from luong_lit.training import run_folder

    run = tmp_path / "run"
    assert (
        run_here([*tiny(toy_corpus, "trainer.max_steps=2"), f"hydra.run.dir={run}"]).returncode == 0
    )
    (run / "results.json").unlink()  # as if stopped before its end
    read = run_folder.read_checkpoint

    def signalled_read(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        return read(*args, **kwargs)

    monkeypatch.setattr(run_folder, "read_checkpoint", signalled_read)
    resumed = [f"hydra.run.dir={run}", "ckpt_path=last", "trainer.max_steps=4"]
    stopped = run_here(["train", *resumed])
    err = stopped.stderr.decode()
    assert stopped.returncode == 143, err[-2000:]
    assert "before training began" in err and "not a readable checkpoint" not in err
    assert "Traceback" not in err
    monkeypatch.undo()
    assert run_here(["train", *resumed]).returncode == 0
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == 4
