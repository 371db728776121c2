"""Training never loses finished work: runs stopped by signals, kills and full disks resume as the
unbroken run."""

from __future__ import annotations

import csv
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from conftest import (
    MAIN_JOB_SCHEDULE,
    PAPER_SCHEDULE,
    REPO,
    fit_toy,
    run_env,
    run_here,
    step_of,
    tiny_overrides,
    train_command,
)

from luong_lit.checkpoint import load_model
from luong_lit.errors import ConfigError
from luong_lit.training.resume import MAY_CHANGE, resume_argv

pytestmark = pytest.mark.slow


def stop_during_epoch_2(
    resume_corpus,
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
        train_command(resume_corpus, run_dir, *extra, schedule=schedule),
        cwd=REPO,
        env=run_env(),
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


def resume(resume_corpus, run_dir: Path, extra=(), schedule=PAPER_SCHEDULE) -> None:
    """Resume the stopped run in ``run_dir`` with ``ckpt_path=last``, to its end."""
    res = subprocess.run(
        train_command(resume_corpus, run_dir, *extra, "ckpt_path=last", schedule=schedule),
        cwd=REPO,
        env=run_env(),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr[-2000:]


def metrics_rows(run_dir: Path) -> list[dict]:
    with open(run_dir / "csv" / "metrics.csv", newline="") as fh:
        return list(csv.DictReader(fh))


#: setting -> (steps per epoch, overrides, schedule, the checkpoint step the kill waits for)
SHORT_EPOCHS = {
    "limit 40 batches, checkpoints at epoch ends only, the main job's schedule": (
        40,
        ["trainer.limit_train_batches=40", "callbacks.checkpoint.every_n_train_steps=0"],
        MAIN_JOB_SCHEDULE,
        40,  # epoch 1's: the kill comes in epoch 2, which resumes from its start
    ),
    "limit a fraction, validation twice an epoch": (
        30,
        ["trainer.limit_train_batches=0.5", "trainer.val_check_interval=0.5"],
        PAPER_SCHEDULE,
        None,  # a random step of epoch 2
    ),
}


def test_resume_continues_the_same_run(toy_corpus, tmp_path):
    full = fit_toy(tmp_path / "full", toy_corpus, 3)
    fit_toy(tmp_path / "split", toy_corpus, 2)
    resumed = fit_toy(tmp_path / "split", toy_corpus, 3, ["ckpt_path=last"])
    a = torch.load(full / "last.ckpt", weights_only=True)
    b = torch.load(resumed / "last.ckpt", weights_only=True)
    assert a["epoch"] == b["epoch"] and a["global_step"] == b["global_step"] > 0
    assert a["lr_schedulers"] == b["lr_schedulers"] and b["lr_schedulers"][0]["_last_lr"][0] < 1.0
    for key, value in a["state_dict"].items():  # same data order, dropout masks and lr schedule
        torch.testing.assert_close(b["state_dict"][key], value, msg=key)


def test_a_run_ended_by_max_steps_mid_epoch_goes_on_with_more_steps(toy_corpus, tmp_path):
    """``trainer.max_steps`` ends a run in the middle of an epoch; run again with a larger one
    (``ckpt_path=last``) it trains the rest of that epoch, validates it and goes on: it ends
    as the unbroken run does (Lightning alone would start the next epoch)."""
    steps = ["trainer.max_steps=20"]
    full = fit_toy(tmp_path / "full", toy_corpus, 3, steps)
    fit_toy(tmp_path / "split", toy_corpus, 3, ["trainer.max_steps=5"])
    resumed = fit_toy(tmp_path / "split", toy_corpus, 3, [*steps, "ckpt_path=last"])
    a = torch.load(full / "last.ckpt", weights_only=True)
    b = torch.load(resumed / "last.ckpt", weights_only=True)
    assert a["global_step"] == b["global_step"] == 20 and a["epoch"] == b["epoch"]
    assert a["lr_schedulers"] == b["lr_schedulers"]
    assert a["TranslationDataModule"] == b["TranslationDataModule"]  # the same epoch, batches
    for key, value in a["state_dict"].items():
        assert torch.equal(b["state_dict"][key], value), key


def test_resume_continues_the_annealed_schedule(toy_corpus, tmp_path):
    """The per-step schedule depends on the planned length, so the interrupted run is the full
    run's own epoch-2 checkpoint, resumed in a fresh directory."""
    anneal = ["schedule=linear_decay", "model.scheduler.epochs=2"]
    full = fit_toy(
        tmp_path / "full", toy_corpus, 3, ["callbacks.epoch_checkpoints.every_n_epochs=1"], anneal
    )
    resumed = fit_toy(
        tmp_path / "resumed", toy_corpus, 3, [f"ckpt_path={full / 'epochs' / 'e01.ckpt'}"], anneal
    )
    a = torch.load(full / "last.ckpt", weights_only=True)
    b = torch.load(resumed / "last.ckpt", weights_only=True)
    mid = torch.load(full / "epochs" / "e01.ckpt", weights_only=True)["lr_schedulers"][0][
        "_last_lr"
    ][0]
    assert a["lr_schedulers"] == b["lr_schedulers"] and a["lr_schedulers"][0]["_last_lr"][0] == 0.0
    assert a["lr_schedulers"][0]["last_epoch"] == a["global_step"] and 0.0 < mid < 1.0
    for key, value in a["state_dict"].items():
        torch.testing.assert_close(b["state_dict"][key], value, msg=key)


def test_epoch_checkpoints_are_off_by_default_and_average_when_on(toy_corpus, tmp_path):
    from luong_lit.checkpoint import average_checkpoints

    assert not (fit_toy(tmp_path / "off", toy_corpus, 2) / "epochs").exists()
    ckpts = fit_toy(
        tmp_path / "on", toy_corpus, 2, ["callbacks.epoch_checkpoints.every_n_epochs=1"]
    )
    epochs = sorted(p.name for p in (ckpts / "epochs").iterdir())
    assert epochs == ["e00.ckpt", "e01.ckpt"] and (ckpts / "best.ckpt").is_file()
    avg = average_checkpoints([ckpts / "epochs" / e for e in epochs], tmp_path / "avg.ckpt")
    net = load_model(avg)[0]
    e0, e1 = (load_model(ckpts / "epochs" / e)[0].state_dict() for e in epochs)
    for key, value in net.state_dict().items():
        torch.testing.assert_close(value, (e0[key] + e1[key]) / 2, msg=key)


@pytest.mark.parametrize(  # kill -9 in CI: the short epochs' and the printed command's tests
    "signum", [pytest.param(signal.SIGKILL, marks=pytest.mark.long), signal.SIGTERM]
)
def test_stopped_in_epoch_2_and_resumed_equals_the_unbroken_run(
    resume_corpus, unbroken, tmp_path, signum
):
    proc = stop_during_epoch_2(resume_corpus, tmp_path, signum)
    if signum == signal.SIGTERM:  # a clean stop: the step finished, saved, said so, no traceback
        assert proc.returncode == 128 + signal.SIGTERM
        err = proc.stderr.read()
        assert (
            "interrupted by signal 15" in err and "ckpt_path=last" in err and "Traceback" not in err
        )
    else:
        assert proc.returncode == -signal.SIGKILL
    resume(resume_corpus, tmp_path)
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


@pytest.mark.parametrize(  # the second setting with --long
    "setting", [s if i == 0 else pytest.param(s, marks=pytest.mark.long)
                for i, s in enumerate(SHORT_EPOCHS)]
)  # fmt: skip
def test_short_epochs_killed_in_epoch_2_resume_as_the_unbroken_run(
    resume_corpus, tmp_path, setting
):
    """Epochs cut short (``limit_train_batches``, as for a large corpus) and validated in their
    middle (``val_check_interval``): a run killed in epoch 2 goes on as the unbroken one."""
    steps, extra, schedule, target = SHORT_EPOCHS[setting]
    full = tmp_path / "unbroken"
    cmd = train_command(resume_corpus, full, *extra, schedule=schedule)
    res = subprocess.run(cmd, cwd=REPO, env=run_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    stop_during_epoch_2(
        resume_corpus, tmp_path / "run", signal.SIGKILL, steps, extra, schedule, target
    )
    resume(resume_corpus, tmp_path / "run", extra, schedule)
    a = torch.load(full / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(tmp_path / "run" / "checkpoints" / "last.ckpt", weights_only=True)
    assert a["global_step"] == b["global_step"] == 3 * steps
    for key, value in a["state_dict"].items():
        assert torch.equal(b["state_dict"][key], value), key
    dev = [(r["epoch"], r["step"], r["val/ppl"]) for r in metrics_rows(full) if r.get("val/ppl")]
    got = [(r["epoch"], r["step"], r["val/ppl"]) for r in metrics_rows(tmp_path / "run")]
    assert [x for x in got if x[2]] == dev, ([x for x in got if x[2]], dev)


def test_stopped_during_validation_validates_that_epoch_again(resume_corpus, unbroken, tmp_path):
    stop = "+callbacks.stop._target_=signal_helpers.SigtermInValidation"
    res = subprocess.run(
        train_command(resume_corpus, tmp_path, stop),
        cwd=REPO,
        env=run_env(),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 128 + signal.SIGTERM, res.stderr[-2000:]
    assert [r["epoch"] for r in metrics_rows(tmp_path) if r.get("val/ppl")] == ["0"]
    resume(resume_corpus, tmp_path)
    dev = [(r["epoch"], r["val/ppl"]) for r in metrics_rows(tmp_path) if r.get("val/ppl")]
    assert dev == [(r["epoch"], r["val/ppl"]) for r in metrics_rows(unbroken) if r.get("val/ppl")]
    assert [e for e, _ in dev] == ["0", "1", "2"]  # epoch 2's validation ran, once
    a = torch.load(unbroken / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=True)
    for key, value in a["state_dict"].items():
        assert torch.equal(b["state_dict"][key], value), key


def test_a_checkpoint_that_cannot_be_written_keeps_the_previous_one(resume_corpus, tmp_path):
    res = subprocess.run(
        train_command(
            resume_corpus,
            tmp_path,
            "trainer.max_epochs=1",
            "callbacks.checkpoint.every_n_train_steps=0",
        ),
        cwd=REPO,
        env=run_env(),
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
    args = train_command(resume_corpus, tmp_path, "trainer.max_epochs=2", "ckpt_path=last")[3:]
    res = subprocess.run(
        [sys.executable, "-c", limited, *args],
        cwd=REPO,
        env=run_env(),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2, res.stderr[-2000:]
    error = [line for line in res.stderr.splitlines() if line.startswith("error: ")]
    assert error and f"{last}: cannot write the checkpoint (" in error[0], res.stderr[-2000:]
    assert "the previous checkpoint is kept" in error[0]
    assert "Traceback" not in res.stderr
    assert last.read_bytes() == before and not list(last.parent.glob(".last.ckpt.*"))


# ------------------------------------------------------------ resumed from its folder alone
def losses(run_dir: Path) -> list[tuple[str, str]]:
    return [(r["step"], r["train/loss"]) for r in metrics_rows(run_dir) if r.get("train/loss")]


def test_killed_and_resumed_by_the_command_it_printed_equals_the_unbroken_run(
    resume_corpus, tmp_path
):
    """``kill -9`` of a run of 20 steps; the command its first line printed (its folder and
    ``ckpt_path=last``, nothing more: the run's overrides come from its folder) resumes it to
    the unbroken run's losses and weights."""
    extra = ["++trainer.max_steps=20", "trainer.log_every_n_steps=1",
             "+callbacks.slow._target_=signal_helpers.SlowSteps"]  # fmt: skip
    full, run_dir = tmp_path / "unbroken", tmp_path / "killed"
    res = subprocess.run(train_command(resume_corpus, full, *extra), cwd=REPO, env=run_env(),
                         capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    ckpt = run_dir / "checkpoints" / "last.ckpt"
    with open(tmp_path / "killed.log", "w") as out:
        proc = subprocess.Popen(train_command(resume_corpus, run_dir, *extra), cwd=REPO,
                                env=run_env(), stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        deadline = time.time() + 300
        while step_of(ckpt) < 5 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        proc.kill()  # kill -9
        proc.wait(timeout=60)
    assert 5 <= step_of(ckpt) < 20
    first = (tmp_path / "killed.log").read_text().splitlines()[0]
    printed = shlex.split(first.split("it resumes with: ", 1)[1].removesuffix(")"))
    assert printed[:3] == ["python", "-m", "luong_lit.train"] and len(printed) == 5, first
    res = subprocess.run([sys.executable, *printed[1:]], cwd=REPO, env=run_env(),
                         capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    a = torch.load(full / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(ckpt, weights_only=True)
    assert a["global_step"] == b["global_step"] == 20
    for key, value in a["state_dict"].items():
        assert torch.equal(b["state_dict"][key], value), key
    assert losses(run_dir) == losses(full) and len(losses(full)) == 20


def run_folder(tmp_path: Path, overrides: list[str]) -> Path:
    """A run folder as a run started from the command line leaves it: its overrides, and a
    ``last.ckpt`` (not read: the overrides are in the folder)."""
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / "checkpoints").mkdir()
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    (run / "checkpoints" / "last.ckpt").write_bytes(b"")
    return run


def test_a_resume_takes_the_runs_overrides_and_changes_only_those_it_may(tmp_path):
    run = run_folder(tmp_path, ["model.net.hidden_size=32", "++trainer.max_steps=20",
                                "ckpt_path=last"])  # fmt: skip
    given = [f"hydra.run.dir={run}", "ckpt_path=last"]
    assert resume_argv(given) == ["model.net.hidden_size=32", "++trainer.max_steps=20", *given]
    again = ["model.net.hidden_size=32", "trainer.max_steps=40", "logger=wandb"]
    assert resume_argv([*given, *again]) == [*given, *again[:1], "++trainer.max_steps=40", again[2]]
    with pytest.raises(ConfigError) as refused:
        resume_argv([*given, "model.net.hidden_size=512", "dropout=0.3", "trainer.max_epochs=3"])
    said = str(refused.value)
    assert (
        "model.net.hidden_size: run 32, here 512" in said and "dropout: run 0.2, here 0.3; " in said
    )
    assert "max_epochs:" not in said and "may change only " + ", ".join(MAY_CHANGE) in said
    assert resume_argv(["model.net.hidden_size=512"]) == ["model.net.hidden_size=512"]  # no resume


def test_a_resume_that_changes_the_run_is_refused_in_one_line(toy_corpus, tmp_path):
    run = run_folder(tmp_path, tiny_overrides(toy_corpus))
    res = run_here(["train", f"hydra.run.dir={run}", "ckpt_path=last", "attention=local_p"])
    err = res.stderr.decode()
    assert res.returncode == 2 and err.count("error: ") == 1 and "Traceback" not in err, err
    assert "model.net.attention.name: run global, here local_p" in err
    assert sorted(p.name for p in run.iterdir()) == [".hydra", "checkpoints"]  # nothing written


def test_nothing_to_resume_says_so_and_lists_the_runs_that_can_be(toy_corpus, tmp_path):
    logs = tmp_path / "logs"
    runs = ["runs/2020-01-01_00-00-00", "multiruns/2020-01-02_00-00-00/0_seed=1", "runs/named"]
    for age, name in enumerate(runs):  # the last, the newest
        (logs / "train" / name / "checkpoints").mkdir(parents=True)
        (logs / "train" / name / "checkpoints" / "last.ckpt").write_bytes(b"")
        os.utime(logs / "train" / name / "checkpoints" / "last.ckpt", (1e9 + age, 1e9 + age))
    (logs / "train" / "runs" / "unstarted").mkdir()  # no last.ckpt: nothing to resume there
    base = ["train", *tiny_overrides(toy_corpus), f"paths.log_dir={logs}", "ckpt_path=last"]
    for where, says in [
        (f"hydra.run.dir={tmp_path}/gone", f"nothing to resume, {tmp_path}/gone does not exist"),
        (f"hydra.run.dir={logs}/train/runs/unstarted", "it holds no checkpoints/last.ckpt"),
        (None, "ckpt_path=last resumes the run in hydra.run.dir=RUN, and none is given"),
    ]:
        res = run_here(base + ([where] if where else []))
        err = res.stderr.decode()
        assert res.returncode == 2 and err.count("error: ") == 1 and says in err, err
        listed = [f"{logs}/train/{name} (saved " for name in reversed(runs)]
        assert all(x in err for x in listed), err
        assert [err.index(x) for x in listed] == sorted(err.index(x) for x in listed)
        newest = f"""'hydra.run.dir="{logs}/train/runs/named"' ckpt_path=last"""
        assert f"resume the newest with: python -m luong_lit.train {newest}" in err
    assert not (tmp_path / "gone").exists()
    assert sorted(p.name for p in (logs / "train" / "runs").iterdir()) == [
        "2020-01-01_00-00-00", "named", "unstarted"
    ]  # fmt: skip


def test_a_step_checkpoint_keeps_the_row_its_step_had_not_yet_logged(tmp_path):
    """A checkpoint written at a step's end comes before Lightning logs that step: killed right
    after it, the run resumes and writes the step's row from the checkpoint, once."""
    from types import SimpleNamespace

    from luong_lit.training.loggers import ResumableCSVLogger, ResumedLogs

    logger = ResumableCSVLogger(save_dir=str(tmp_path), name="", version="")
    logger.log_metrics({"train/loss": 3.0, "train/lr": 1.0, "epoch": 0}, step=3)
    logger.save()
    trainer = SimpleNamespace(
        loggers=[logger], is_global_zero=True, global_step=5, current_epoch=0,
        log_every_n_steps=1, callback_metrics={"train/loss": torch.tensor(2.5),
                                               "train/lr": torch.tensor(1.0)},
    )  # fmt: skip
    saved: dict = {}
    ResumedLogs().on_save_checkpoint(trainer, None, saved)  # the end of the 5th step: row 4
    resumed = ResumedLogs()
    resumed.on_load_checkpoint(trainer, None, saved)
    resumed.on_train_start(trainer, None)
    resumed.on_load_checkpoint(trainer, None, saved)
    resumed.on_train_start(trainer, None)  # resumed twice: still one row
    rows = list(csv.DictReader(open(logger.experiment.metrics_file_path)))
    assert [(r["step"], r["train/loss"]) for r in rows] == [("3", "3.0"), ("4", "2.5")]
