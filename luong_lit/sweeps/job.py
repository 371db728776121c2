"""What one job of a ``-m`` sweep takes for itself, and what it finds of an earlier try.

* :func:`job_resources`: a GPU from the pool (:mod:`luong_lit.sweeps.pool`) for the job's whole
  life when the sweep runs several jobs at once on one machine's GPUs, its share of the CPU
  cores as its thread count, and ``job.json`` (device, threads, start and end) in its directory.
* :func:`earlier_work`: a job launched again into the same directory (a requeued SLURM job, or
  a sweep run again with ``hydra.sweep.dir=<the sweep>``) resumes from its ``last.ckpt``, and a
  finished one (``results.json``) is not trained again.
* Resolvers used by ``conf/hydra/launcher/`` and ``conf/logger/wandb.yaml``:
  the number of parallel jobs, SLURM's GPU count, the W&B group, name and tags of a sweep's job.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from luong_lit.errors import ConfigError
from luong_lit.sweeps.pool import DevicePool


@dataclass
class SweepJob:
    """A job of a multirun, as Hydra describes it to the job."""

    num: int
    sweep_dir: str
    override_dirname: str
    overrides: list[str]
    launcher: str  # the launcher's class path
    n_jobs: int | None  # joblib's
    cpus_per_task: int | None  # submitit's


def sweep_job() -> SweepJob | None:
    """This job's place in its sweep, or None outside a multirun."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized():
        return None
    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        return None
    launcher = hc.launcher
    return SweepJob(
        num=int(hc.job.num),
        sweep_dir=str(hc.sweep.dir),
        override_dirname=str(hc.job.override_dirname),
        overrides=list(hc.overrides.task),
        launcher=str(launcher.get("_target_", "")),
        n_jobs=launcher.get("n_jobs"),
        cpus_per_task=launcher.get("cpus_per_task"),
    )


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


def earlier_work(cfg: DictConfig) -> tuple[str, Any] | None:
    """In a sweep's job: ``("done", results)`` when this directory holds a finished run,
    ``("resume", last.ckpt)`` when it holds an interrupted one, else None."""
    if sweep_job() is None or cfg.get("ckpt_path"):
        return None
    out = Path(cfg.paths.output_dir)
    if (out / "results.json").is_file():
        return "done", json.loads((out / "results.json").read_text())
    last = out / "checkpoints" / "last.ckpt"
    return ("resume", str(last)) if last.is_file() else None


# ------------------------------------------------------------------ resolvers for the configs
def most_at_once(jobs: list[dict]) -> dict[str, int]:
    """Per device, the most jobs that ran at once: ``jobs`` are records with ``device``,
    ``start_s`` and ``end_s`` (a sweep's ``job.json`` files), each running over [start, end)."""
    most: dict[str, int] = {}
    for dev in {j["device"] for j in jobs}:
        mine = [j for j in jobs if j["device"] == dev]
        most[dev] = max(sum(o["start_s"] <= j["start_s"] < o["end_s"] for o in mine) for j in mine)
    return most


def n_jobs(accelerator: str, jobs_per_gpu: int) -> int:
    """Jobs at once on this machine: GPUs × jobs per GPU, or one per CPU core."""
    import torch

    gpus = torch.cuda.device_count() if str(accelerator) != "cpu" else 0
    return gpus * int(jobs_per_gpu) if gpus else usable_cores()


def slurm_gpus(accelerator: str, devices: Any) -> int | None:
    """``gpus_per_node`` for SLURM: the trainer's device count (None on CPU)."""
    if str(accelerator) == "cpu":
        return None
    try:
        return int(devices)
    except (TypeError, ValueError):
        raise ConfigError(
            f"SLURM needs a number of GPUs per node: set trainer.devices=N (got {devices!r})"
        ) from None


def slurm_tasks(accelerator: str, devices: Any) -> int:
    """``tasks_per_node``: one task per GPU, as Lightning's SLURM environment expects."""
    return slurm_gpus(accelerator, devices) or 1


def wandb_group() -> str | None:
    """A sweep's jobs join one W&B group, named after the sweep's directory."""
    job = sweep_job()
    return None if job is None else "/".join(Path(job.sweep_dir).parts[-2:])


def wandb_name(default: str) -> str:
    job = sweep_job()
    return default if job is None else (job.override_dirname or f"job{job.num}")


def wandb_tags() -> list[str]:
    job = sweep_job()
    return [] if job is None else [o[:64] for o in job.overrides]  # W&B's limit per tag


SWEPT_ENV = "LUONG_LIT_SWEPT"  # the keys a sweep varies, for its jobs' directory names


def note_swept(argv: Sequence[str]) -> None:
    """Tell this sweep's jobs (in this process or started from it) which of the command line's
    overrides the sweep varies (``attention=local_p,global``, ``glob(...)``, ``range(...)``),
    for :func:`dirname`."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = [a for a in argv if "=" in a and not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(args)
    except Exception:  # noqa: BLE001 - Hydra reports a malformed override itself
        return
    os.environ[SWEPT_ENV] = ",".join(o.key_or_group for o in parsed if o.is_sweep_override())


def _items(overrides: str) -> list[str]:
    """``k=v`` items of Hydra's ``override_dirname`` (a value may hold commas: ``k=[1,2]``)."""
    return [x for x in re.split(r",(?=[+~]*[\w.@/-]+=)", str(overrides)) if x]


def dirname(overrides: str, limit: int = 120) -> str:
    """A job's directory name from its overrides: what the sweep varies first (in the command
    line's order), then the others, then the ``+``/``++`` ones; one path component (``/``
    becomes ``_``), cut to ``limit`` characters with a digest of the whole, so that long values
    still fit and every job keeps a name of its own."""
    import hashlib

    swept = [k for k in os.environ.get(SWEPT_ENV, "").split(",") if k]
    items = _items(overrides)

    def rank(item: str) -> tuple[int, int]:
        key = item.split("=", 1)[0]
        if key.lstrip("+~") in swept:
            return 0, swept.index(key.lstrip("+~"))
        return (2 if key.startswith("+") else 1), 0

    name = ",".join(sorted(items, key=rank)).replace(os.sep, "_")
    if len(name) <= limit:
        return name
    return name[: limit - 9] + "~" + hashlib.sha1(name.encode()).hexdigest()[:8]


def paper_epochs(dropout: Any) -> int:
    """The paper's epochs (§4.1): 10, or 12 for a model trained with dropout."""
    return 12 if float(dropout) > 0 else 10


def paper_halving_after(dropout: Any) -> int:
    """The paper's epochs before halving (§4.1): 5, or 8 for a model trained with dropout."""
    return 8 if float(dropout) > 0 else 5


def register_resolvers() -> None:
    """Make the ``luong_lit.*`` resolvers known to OmegaConf (once per process)."""
    resolvers = {
        "luong_lit.n_jobs": n_jobs,
        "luong_lit.dirname": dirname,
        "luong_lit.slurm_gpus": slurm_gpus,
        "luong_lit.slurm_tasks": slurm_tasks,
        "luong_lit.wandb_group": wandb_group,
        "luong_lit.wandb_name": wandb_name,
        "luong_lit.wandb_tags": wandb_tags,
        "luong_lit.paper_epochs": paper_epochs,
        "luong_lit.paper_halving_after": paper_halving_after,
    }
    for name, fn in resolvers.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
