"""What one job of a ``-m`` sweep takes for itself (:func:`job_resources`): a GPU from the pool
(:class:`DevicePool`) for the job's whole life when the sweep runs several jobs at once
on one machine's GPUs, its share of the CPU cores as its thread count, and ``job.json`` (device,
threads, start and end) in its directory.

The GPUs of one machine are a pool of slots (:class:`DevicePool`) that the jobs of sweeps take
and give back. Each GPU has ``per_device`` slots, each slot a lock file (``gpu<d>.<k>.lock`` in
the pool directory) held with ``flock`` for as long as a job runs. The operating system drops
the lock when the process that holds it exits, however it exits, so a crashed job frees its GPU.
Slots are tried slot index first (slot 0 of every GPU, then slot 1 of every GPU, ...), so jobs
spread over the GPUs before any GPU is shared. With one slot per GPU, no two jobs ever share a
device, whatever their lengths; ``job.num % n_gpus`` would double-book a GPU when jobs differ in
length. Plain Python (``fcntl``): no launcher offers a GPU pool, and a lock file works the same
under joblib's workers, submitit's local processes and separate shells.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from omegaconf import DictConfig

from luong_lit.errors import ConfigError
from luong_lit.runtime import is_rank_zero
from luong_lit.sweeps.job import SweepJob, sweep_job


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


@dataclass
class Slot:
    """One slot of one GPU, held until :meth:`release` (or the process's exit)."""

    device: int
    index: int
    handle: IO[str] | None

    def release(self) -> None:
        if self.handle is not None:
            self.handle.close()  # closing the file drops the lock
            self.handle = None

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class DevicePool:
    """``n_devices`` GPUs with ``per_device`` slots each, locked through files in ``lock_dir``."""

    def __init__(self, lock_dir: str | Path, n_devices: int, per_device: int = 1) -> None:
        if n_devices < 1 or per_device < 1:
            raise ConfigError(
                f"a device pool needs at least one device and one job per device "
                f"(got {n_devices} devices, sweep.jobs_per_gpu={per_device})"
            )
        self.lock_dir, self.n_devices, self.per_device = Path(lock_dir), n_devices, per_device
        self.lock_dir.mkdir(parents=True, exist_ok=True)

    def _try(self, device: int, index: int, owner: str) -> Slot | None:
        handle = open(self.lock_dir / f"gpu{device}.{index}.lock", "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "job": owner, "since": time.time()}))
        handle.flush()
        return Slot(device, index, handle)

    def try_acquire(self, owner: str = "") -> Slot | None:
        """A free slot, or None when every slot is held."""
        for index in range(self.per_device):
            for device in range(self.n_devices):
                slot = self._try(device, index, owner)
                if slot is not None:
                    return slot
        return None

    def acquire(self, owner: str = "", poll_s: float = 0.5, timeout_s: float | None = None) -> Slot:
        """Wait for a free slot (forever, or ``timeout_s`` seconds: then :class:`TimeoutError`)."""
        start = time.monotonic()
        while True:
            slot = self.try_acquire(owner)
            if slot is not None:
                return slot
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                raise TimeoutError(f"no free GPU slot in {self.lock_dir} after {timeout_s:.0f} s")
            time.sleep(poll_s)
