"""What one job of a ``-m`` sweep takes for itself (:func:`job_resources`): a GPU from the pool
(:mod:`luong_lit.sweeps.pool`) for the job's whole life when the sweep runs several jobs at once
on one machine's GPUs, its share of the CPU cores as its thread count, and ``job.json`` (device,
threads, start and end) in its directory; and what a sweep's records say of it afterwards
(:func:`most_at_once`).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from luong_lit.runtime import is_rank_zero
from luong_lit.sweeps.job import SweepJob, sweep_job
from luong_lit.sweeps.pool import DevicePool


def usable_cores() -> int:
    return len(os.sched_getaffinity(0))


def threads_for(job: SweepJob) -> int | None:
    """The job's thread count: its share of the cores when jobs run side by side."""
    if job.n_jobs is not None:  # joblib: n_jobs jobs at once (-1: one per core)
        parallel = usable_cores() if job.n_jobs < 1 else job.n_jobs
        return max(1, usable_cores() // parallel)
    if job.cpus_per_task:  # submitit: the cores the job asked for
        return min(int(job.cpus_per_task), usable_cores())
    return None  # jobs one after another: torch's default


def _wants_pooled_gpu(cfg: DictConfig, job: SweepJob) -> bool:
    import torch

    accelerator, devices = str(cfg.trainer.accelerator), cfg.trainer.get("devices")
    on_gpu = accelerator in ("gpu", "cuda") or (accelerator == "auto" and torch.cuda.is_available())
    one_device = str(devices) == "1"
    return on_gpu and one_device and "SlurmLauncher" not in job.launcher  # SLURM allocates


def _write_record(out: Path, record: dict[str, Any]) -> None:
    if not is_rank_zero():  # one record a job, not one a rank
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "job.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def _earlier_record(out: Path) -> dict[str, Any]:
    try:
        return json.loads((out / "job.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


@contextmanager
def job_resources(cfg: DictConfig) -> Iterator[dict[str, Any]]:
    """Within a sweep: set ``cfg.threads`` and pin ``cfg.trainer.devices`` to a pooled GPU (before
    CUDA initialises in this job) for the body's duration. Yields the job's record, written to
    ``job.json``: process, device, threads, start and end times of this try, how many tries it
    took and ``seconds`` over all of them."""
    job = sweep_job()
    out = Path(cfg.paths.output_dir)
    earlier = _earlier_record(out)
    record: dict[str, Any] = {"pid": os.getpid(), "host": socket.gethostname()}
    record["tries"] = int(earlier.get("tries", 0)) + 1
    slot = None
    try:
        if job is not None:
            record["num"] = job.num
            if cfg.get("threads") is None:
                cfg.threads = threads_for(job)
            if _wants_pooled_gpu(cfg, job):
                slot = gpu_pool(cfg).acquire(owner=str(out))
                cfg.trainer.devices = [slot.device]
                record["device"] = f"cuda:{slot.device}"
        record.update(threads=cfg.get("threads"), start=time.time())
        _write_record(out, record)
        yield record
    finally:
        record["end"] = time.time()
        this_try = record["end"] - record.get("start", record["end"])
        record["seconds"] = round(float(earlier.get("seconds", 0.0)) + this_try, 1)
        _write_record(out, record)
        if slot is not None:
            slot.release()


def gpu_pool(cfg: DictConfig) -> DevicePool:
    import torch

    return DevicePool(cfg.sweep.pool_dir, torch.cuda.device_count(), int(cfg.sweep.jobs_per_gpu))


def most_at_once(jobs: list[dict]) -> dict[str, int]:
    """Per device, the most jobs that ran at once: ``jobs`` are records with ``device``,
    ``start_s`` and ``end_s`` (a sweep's ``job.json`` files), each running over [start, end)."""
    most: dict[str, int] = {}
    for dev in {j["device"] for j in jobs}:
        mine = [j for j in jobs if j["device"] == dev]
        most[dev] = max(sum(o["start_s"] <= j["start_s"] < o["end_s"] for o in mine) for j in mine)
    return most
