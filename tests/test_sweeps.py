"""Sweeps: jobs side by side (joblib) and as separate processes (submitit_local), the GPU pool,
a job requeued the way SLURM asks for it, an optuna search, W&B groups, the sweep report."""

from __future__ import annotations

import csv
import io
import json
import multiprocessing as mp
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from conftest import REPO, compose_cfg, run_cli, run_env, step_of, tiny_overrides, train_command

from luong_lit.config import CONF_DIR
from luong_lit.sweeps.resources import DevicePool, usable_cores

pytestmark = pytest.mark.slow


def sweep(
    resume_corpus, sweep_dir: Path, *args: str, fdr: bool = True
) -> subprocess.CompletedProcess:
    """``python -m luong_lit train -m`` on the toy corpus (one fast_dev_run per job)."""
    cmd = [sys.executable, "-m", "luong_lit", "train", "-m", *tiny_overrides(resume_corpus)]
    cmd += ["debug=fdr"] if fdr else ["trainer.max_epochs=3", "test_after_training=false"]
    cmd += [f"hydra.sweep.dir={sweep_dir}", *args]
    timeout = 600
    res = subprocess.run(
        cmd, cwd=REPO, env=run_env(), capture_output=True, text=True, timeout=timeout
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def jobs_of(sweep_dir: Path) -> list[Path]:
    return sorted(
        (p for p in sweep_dir.iterdir() if (p / ".hydra").is_dir()),
        key=lambda p: int(p.name.split("_")[0]),
    )


def record(job: Path) -> dict:
    return json.loads((job / "job.json").read_text())


# ------------------------------------------------------------------------------ the GPU pool
def _job(lock_dir: str, seconds: float, out: str) -> None:
    slot = DevicePool(lock_dir, n_devices=2).acquire(poll_s=0.01)
    start = time.monotonic()
    time.sleep(seconds)
    with open(out, "a") as fh:
        fh.write(f"{slot.device} {start} {time.monotonic()}\n")
    slot.release()


def _hold_and_die(lock_dir: str, ready) -> None:
    slot = DevicePool(lock_dir, n_devices=1).acquire()  # held while the reference lives
    ready.set()
    time.sleep(60)
    slot.release()


# -------------------------------------------------------------------- requeued the SLURM way


# ------------------------------------------------------------------------------- the report
def fake_run(sweep_dir: Path, num: int, overrides: list[str], numbers: dict) -> None:
    """A finished run's directory: its config as the run saved it, and its results."""
    from omegaconf import OmegaConf

    run = sweep_dir / f"{num}_job"
    (run / ".hydra").mkdir(parents=True)
    cfg = compose_cfg(overrides, run)
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    test = {"ppl": numbers["ppl"], "bleu_greedy": numbers["bleu"]}
    results = {"checkpoint": "best.ckpt", "dev_ppl": numbers["dev"], "test_2016_flickr": test}
    (run / "results.json").write_text(json.dumps(results))


@pytest.mark.long  # sweeps in CI: one folder a job, submitit, the shared store
def test_joblib_runs_four_jobs_two_at_a_time_each_in_its_own_directory(resume_corpus, tmp_path):
    sweep(
        resume_corpus,
        tmp_path,
        "attention=local_p,global",
        "score=dot,general",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        fdr=False,  # jobs of a few seconds, longer than a worker's start
    )
    jobs = jobs_of(tmp_path)
    assert len(jobs) == 4
    seen = set()
    for job in jobs:
        cfg = yaml.safe_load((job / ".hydra" / "config.yaml").read_text())
        net = cfg["model"]["net"]
        cell = (net["attention"]["name"], net["score"]["name"])
        overrides = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text())
        assert f"attention={cell[0]}" in overrides and f"score={cell[1]}" in overrides
        seen.add(cell)
        rec = record(job)
        assert rec["threads"] == max(1, usable_cores() // 2) and rec["end"] > rec["start"]
    assert len(seen) == 4
    records = [record(j) for j in jobs]
    assert len({r["pid"] for r in records}) >= 2  # worker processes, not this one
    spans = sorted((r["start"], r["end"]) for r in records)
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:]))  # two jobs ran at once


def test_submitit_local_runs_each_job_as_its_own_process(resume_corpus, tmp_path):
    sweep(resume_corpus, tmp_path, "attention=local_m,global", "hydra/launcher=submitit_local")
    records = [record(j) for j in jobs_of(tmp_path)]
    assert len(records) == 2 and len({r["pid"] for r in records}) == 2
    assert all(r["threads"] == min(2, usable_cores()) and r["tries"] == 1 for r in records)
    assert (tmp_path / ".submitit").is_dir()


def test_job_record_adds_up_tries_and_a_finished_run_keeps_its_record(tmp_path):
    from omegaconf import OmegaConf

    from luong_lit.sweeps.resources import job_resources

    cfg = OmegaConf.create({"paths": {"output_dir": str(tmp_path)}, "threads": 1})
    earlier = {"pid": 1, "tries": 1, "start": 100.0, "end": 160.0, "seconds": 60.0}
    (tmp_path / "job.json").write_text(json.dumps(earlier))
    with job_resources(cfg) as rec:  # resumed: a second try, its time added to the first's
        time.sleep(0.2)
    second = record(tmp_path)
    assert second["tries"] == 2 and second["start"] == rec["start"] > 160.0
    assert second["seconds"] == pytest.approx(60.0 + second["end"] - second["start"], abs=0.1)
    assert second["seconds"] >= 60.2


def test_a_finished_run_is_not_trained_again_and_keeps_its_record(monkeypatch, tmp_path):
    import luong_lit.training.run as train_cmd
    import luong_lit.training.run_folder as run_folder

    results = {"checkpoint": "best.ckpt", "test_2016_flickr": {"ppl": 4.6},
               "objective": "val/ppl", "objective_value": 4.5}  # fmt: skip
    cfg = compose_cfg([], tmp_path)
    monkeypatch.setattr(run_folder, "sweep_job", lambda: object())  # a job of a sweep
    (Path(cfg.paths.output_dir) / "results.json").write_text(json.dumps(results))

    def must_not_run(cfg):
        raise AssertionError("a finished run took the job's resources (and rewrote job.json)")

    monkeypatch.setattr(train_cmd, "job_resources", must_not_run)
    out = train_cmd.train(cfg)
    assert out == {"test": results, "objective": 4.5}


def test_jobs_of_unequal_length_never_share_a_device(tmp_path):
    ctx = mp.get_context("fork")
    rng = random.Random(3)
    procs = [
        ctx.Process(
            target=_job, args=(str(tmp_path), rng.uniform(0.02, 0.4), str(tmp_path / "log"))
        )
        for _ in range(8)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    spans: dict[int, list[tuple[float, float]]] = {}
    for line in (tmp_path / "log").read_text().splitlines():
        device, start, end = line.split()
        spans.setdefault(int(device), []).append((float(start), float(end)))
    assert sorted(spans) == [0, 1] and sum(map(len, spans.values())) == 8
    for device_spans in spans.values():
        device_spans.sort()
        for (_, end), (start, _) in zip(device_spans, device_spans[1:]):
            assert start >= end  # the next job on a device starts after the last one ended


def test_a_crashed_job_frees_its_device(tmp_path):
    ctx = mp.get_context("fork")
    ready = ctx.Event()
    proc = ctx.Process(target=_hold_and_die, args=(str(tmp_path), ready))
    proc.start()
    assert ready.wait(30)
    pool = DevicePool(tmp_path, n_devices=1)
    assert pool.try_acquire() is None  # held by the running job
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(10)
    slot = pool.acquire(poll_s=0.01, timeout_s=10)
    assert slot.device == 0


def test_jobs_spread_over_devices_before_sharing_one(tmp_path):
    pool = DevicePool(tmp_path, n_devices=2, per_device=2)
    slots = [pool.try_acquire() for _ in range(4)]
    assert [(s.device, s.index) for s in slots] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert pool.try_acquire() is None
    slots[2].release()
    assert (pool.try_acquire().device, slots[3].device) == (0, 1)


def test_a_job_signalled_for_requeue_resumes_to_the_unbroken_result(
    resume_corpus, unbroken, tmp_path
):
    """submitit's signal (SIGUSR2, as SLURM sends it before a time limit or on preemption) in
    epoch 2: the job saves its step, submitit requeues it, and it resumes from ``last.ckpt``."""
    cmd = train_command(resume_corpus, tmp_path / "unused")
    cmd[4:4] = ["-m", f"hydra.sweep.dir={tmp_path}", "hydra/launcher=submitit_local"]
    launcher = subprocess.Popen(
        cmd, cwd=REPO, env=run_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 300
    while not list(tmp_path.glob("0_*/checkpoints/last.ckpt")) and time.time() < deadline:
        assert launcher.poll() is None, launcher.stderr.read()[-3000:]
        time.sleep(0.05)
    job = next(tmp_path.glob("0_*"))
    while step_of(job / "checkpoints" / "last.ckpt") < 75 and time.time() < deadline:
        time.sleep(0.01)
    os.kill(record(job)["pid"], signal.SIGUSR2)
    _, err = launcher.communicate(timeout=300)
    assert launcher.returncode == 0, err[-3000:]
    assert record(job)["tries"] == 2
    log = (job / "train.log").read_text()
    assert "submitit requeues this job" in log  # saved by us first, then handed to submitit
    assert "resuming this sweep job from" in log
    a = torch.load(unbroken / "checkpoints" / "last.ckpt", weights_only=True)
    b = torch.load(job / "checkpoints" / "last.ckpt", weights_only=True)
    assert a["global_step"] == b["global_step"] == 3 * 60
    for key, value in a["state_dict"].items():
        assert torch.equal(b["state_dict"][key], value), key


# ----------------------------------------------------------------------------- optuna search
def test_optuna_search_writes_its_best_parameters(resume_corpus, tmp_path):
    sweep(
        resume_corpus,
        tmp_path,
        "search=local_p",
        "hydra.sweeper.n_trials=3",
        "hydra.sweeper.n_jobs=3",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
    )
    result = yaml.safe_load((tmp_path / "optimization_results.yaml").read_text())
    best = result["best_params"]
    assert 0.1 <= best["model.optimizer.lr"] <= 2.0 and 0.0 <= best["dropout"] <= 0.5
    assert 2 <= best["model.net.attention.D"] <= 16
    values = [record(j)["objective"] for j in jobs_of(tmp_path)]
    assert len(values) == 3 and result["best_value"] == pytest.approx(min(values))


# ------------------------------------------------------------------------ W&B group per sweep
def test_a_sweeps_jobs_join_one_wandb_group_named_after_it(resume_corpus, tmp_path):
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf, open_dict

    from luong_lit.config_parts import offer_parts
    from luong_lit.sweeps.resolvers import register_resolvers

    register_resolvers()
    offer_parts()
    overrides = ["logger=wandb", "attention=local_m", "seed=2"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("train", overrides=overrides, return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.mode = "MULTIRUN"
        cfg.hydra.sweep.dir = str(tmp_path / "multiruns" / "2026-01-02_03-04-05")
        cfg.hydra.job.num = 3
        cfg.hydra.job.override_dirname = "attention=local_m,seed=2"
        cfg.hydra.runtime.output_dir = str(tmp_path / "job")
    HydraConfig.instance().set_config(cfg)
    try:
        node = OmegaConf.to_container(cfg.logger.wandb, resolve=True)
    finally:
        HydraConfig.instance().cfg = None
    assert node["group"] == "multiruns/2026-01-02_03-04-05"
    assert node["name"] == "attention=local_m,seed=2"
    assert node["tags"] == overrides


def test_report_groups_a_sweeps_seeds_into_mean_and_sd(tmp_path):
    rng = random.Random(5)
    cells = {"attention=global,score=dot": [], "attention=local_p,score=general": []}
    num = 0
    for cell, numbers in cells.items():
        for seed in (1234, 2):
            n = {"ppl": rng.uniform(4, 6), "bleu": rng.uniform(30, 36), "dev": rng.uniform(4, 7)}
            numbers.append(n)
            fake_run(tmp_path, num, [*cell.split(","), f"seed={seed}"], n)
            num += 1
    res = subprocess.run(
        [sys.executable, "-m", "luong_lit", "report", str(tmp_path), "--csv", str(tmp_path / "c")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(io.StringIO((tmp_path / "c").read_text())))
    assert [r["cell"] for r in rows] == [c.replace(",", " ") for c in cells]
    for row, numbers in zip(rows, cells.values()):
        assert row["runs"] == "2" and row["seeds"] == "1234 2"
        for column, key in (("ppl", "ppl"), ("bleu_greedy", "bleu"), ("dev_ppl", "dev")):
            xs = [n[key] for n in numbers]
            assert float(row[f"{column}_mean"]) == pytest.approx(statistics.fmean(xs), abs=1e-4)
            assert float(row[f"{column}_sd"]) == pytest.approx(statistics.stdev(xs), abs=1e-4)
    assert rows[1]["paper_table"] == "4" and rows[1]["paper_ppl"] == "5.9"  # WMT'14's, so named
    assert rows[1]["paper_row"].endswith("(measured on WMT'14 En→De; this run: multi30k)")
    lines = res.stdout.splitlines()
    assert len(lines) == 4 and " ± " in lines[2] and "Table 4: global (dot)" in lines[2]


def test_notebook_table4_groups_seeds_only_when_a_seed_repeats(tmp_path):
    from luong_lit.analysis.tables import table4

    numbers = [{"ppl": 5.0 + i, "bleu": 30.0 + i, "dev": 6.0 + i} for i in range(3)]
    fake_run(tmp_path, 0, ["attention=global", "score=dot", "seed=1234"], numbers[0])
    fake_run(tmp_path, 1, ["attention=global", "score=dot", "seed=2"], numbers[1])
    fake_run(tmp_path, 2, ["attention=local_p", "score=general", "seed=1234"], numbers[2])
    runs = sorted(tmp_path.iterdir())
    rows = table4(runs).splitlines()[2:]
    assert len(rows) == 2 and "5.50 ± 0.71" in rows[0] and "| 2 |" in rows[0]
    assert "7.00" in rows[1] and "±" not in rows[1].split("|")[4]
    single = table4([runs[0], runs[2]]).splitlines()[2:]  # no seed repeats: one row per run
    assert len(single) == 2 and "±" not in "".join(single)


def test_notebook_figures_draw_a_cell_once_whatever_its_seeds(tmp_path):
    """Seeds share a system's name: keyed by name alone, one seed would hide the other."""
    from luong_lit.analysis.tables import cells, with_seeds

    n = {"ppl": 5.0, "bleu": 30.0, "dev": 6.0}
    fake_run(tmp_path, 0, ["attention=global", "score=dot", "seed=1234"], n)
    fake_run(tmp_path, 1, ["attention=global", "score=dot", "seed=2"], n)
    fake_run(tmp_path, 2, ["attention=global", "score=dot", "trainer.max_epochs=3"], n)
    fake_run(tmp_path, 3, ["attention=local_p", "score=general", "seed=2"], n)
    runs = sorted(tmp_path.iterdir())
    grouped = cells(runs)
    assert list(with_seeds(grouped)) == [
        "attention=global score=dot, 2 seeds",
        "attention=global score=dot trainer.max_epochs=3",
        "attention=local_p score=general",
    ]
    assert list(grouped.values()) == [runs[:2], [runs[2]], [runs[3]]]


def test_gpu_jobs_of_a_joblib_sweep_are_pinned_to_pooled_devices(monkeypatch, tmp_path):
    """The wiring on a machine without a GPU: a fake device count, two jobs at once."""
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    from luong_lit.config_parts import offer_parts
    from luong_lit.sweeps.resources import job_resources

    offer_parts()
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            "train",
            overrides=["trainer=gpu", "hydra/launcher=joblib", f"sweep.pool_dir={tmp_path}"],
            return_hydra_config=True,
        )
    with open_dict(cfg):
        cfg.hydra.mode = "MULTIRUN"
        cfg.hydra.launcher.n_jobs = 2
        cfg.hydra.job.num = 0
    HydraConfig.instance().set_config(cfg)
    jobs = []
    try:
        for name in ("a", "b"):
            job = cfg.copy()
            job.paths.output_dir = str(tmp_path / name)
            jobs.append(job)
        with job_resources(jobs[0]), job_resources(jobs[1]):
            assert [list(j.trainer.devices) for j in jobs] == [[0], [1]]
            assert DevicePool(tmp_path, 2).try_acquire() is None  # both GPUs are held
        assert DevicePool(tmp_path, 2).try_acquire() is not None  # and given back
    finally:
        HydraConfig.instance().cfg = None
    assert [record(tmp_path / n)["device"] for n in ("a", "b")] == ["cuda:0", "cuda:1"]


@pytest.mark.slow
def test_multirun_sweep_writes_one_directory_per_job(toy_corpus, tmp_path):
    res = run_cli(
        [
            "train",
            "-m",
            "attention=local_p,global",
            "score=dot,general",
            *tiny_overrides(toy_corpus),
            "debug=fdr",
            f"hydra.sweep.dir={tmp_path}/sweep",
        ],
        stdin="",
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    jobs = sorted(p for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert len(jobs) == 4
    for job in jobs:
        assert (job / ".hydra" / "config.yaml").is_file() and (job / "train.log").is_file()
    import yaml

    combos = set()
    for job in jobs:
        cfg = yaml.safe_load((job / ".hydra" / "config.yaml").read_text())
        combos.add((cfg["model"]["net"]["attention"]["name"], cfg["model"]["net"]["score"]["name"]))
    assert combos == {(a, s) for a in ("local_p", "global") for s in ("dot", "general")}


def test_a_sweeps_job_folders_name_what_the_sweep_varies_only(monkeypatch):
    """The design card's sweep with constant ``++trainer.*`` overrides: each folder is named by
    the swept values alone (the constants are the sweep's, in its ``multirun.yaml``); a name too
    long for its limit keeps whole items and ends with a digest, never a value cut in two."""
    from luong_lit.sweeps.dirnames import SWEPT_ENV, dirname, note_swept

    monkeypatch.delenv(SWEPT_ENV, raising=False)
    argv = ["-m", "attention=local_p,global", "score=dot,general",
            "++trainer.limit_test_batches=2", "++trainer.limit_val_batches=2",
            "++trainer.max_steps=20", "++trainer.val_check_interval=5", "seed=7"]  # fmt: skip
    note_swept(argv)
    hydra_name = (  # Hydra's override_dirname: sorted by key
        "++trainer.limit_test_batches=2,++trainer.limit_val_batches=2,++trainer.max_steps=20,"
        "++trainer.val_check_interval=5,attention={a},score={s},seed=7"
    )
    names = {
        dirname(hydra_name.format(a=a, s=s))
        for a in ("local_p", "global")
        for s in ("dot", "general")
    }
    assert names == {f"attention={a},score={s}" for a in ("local_p", "global")
                     for s in ("dot", "general")}  # fmt: skip
    cut = dirname(hydra_name.format(a="local_p", s="dot"), limit=26)
    assert len(cut) <= 26 and cut.startswith("attention=local_p~")  # whole items, then a digest
    assert dirname(hydra_name.format(a="local_p", s="general"), limit=26) != cut


def test_a_sweep_that_varies_nothing_names_its_job_by_all_its_overrides(monkeypatch):
    from luong_lit.sweeps.dirnames import SWEPT_ENV, dirname, note_swept

    monkeypatch.delenv(SWEPT_ENV, raising=False)
    note_swept(["-m", "ladder=table1_base", "seed=2"])
    assert dirname("ladder=table1_base,seed=2") == "ladder=table1_base,seed=2"


def test_the_design_cards_sweep_takes_the_trainer_keys_a_user_sets():
    from luong_lit.config import check_sweep, compose

    check_sweep(["attention=local_p,global", "score=dot,general", "trainer.max_steps=30"])
    cfg = compose(["trainer.limit_train_batches=5", "trainer.val_check_interval=0.5",
                   "trainer.limit_val_batches=2", "trainer.accumulate_grad_batches=2"])  # fmt: skip
    assert cfg.trainer.limit_train_batches == 5 and cfg.trainer.val_check_interval == 0.5
