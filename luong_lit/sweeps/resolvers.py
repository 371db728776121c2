"""The ``luong_lit.*`` resolvers of the configs (:func:`register_resolvers`), used by
``conf/hydra/``, ``conf/hydra/launcher/``, ``conf/logger/wandb.yaml`` and
``conf/callbacks/default.yaml``: the number of parallel jobs, SLURM's GPU and task counts, the
W&B group, name and tags of a sweep's job, a job's directory name
(:mod:`luong_lit.sweeps.dirnames`), a run's folder name under torchrun and the dev metric's
better direction. The paper's epochs and halving: :mod:`luong_lit.paper.resolvers`, registered
with these.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from luong_lit.errors import ConfigError
from luong_lit.paper.resolvers import RESOLVERS as PAPER_RESOLVERS
from luong_lit.sweeps.dirnames import dirname
from luong_lit.sweeps.job import sweep_job
from luong_lit.sweeps.resources import usable_cores


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


def run_name(stamp: str) -> str:
    """A single run's folder name: its start time (``stamp``); under torchrun or srun, whose
    ranks start Hydra each on its own clock, a name they all agree on: the day and the
    rendezvous id (``--rdzv-id``; torchrun's own for ``--standalone``), SLURM's job and step,
    or, under torchrun without an id, rank 0's start time, handed to every rank on the store
    torchrun's agent keeps (:func:`rank_zeros_stamp`)."""
    import os

    run_id = os.environ.get("TORCHELASTIC_RUN_ID")
    ranks = int(os.environ.get("WORLD_SIZE", "1"))
    if run_id and run_id != "none" and ranks > 1:
        return f"{str(stamp)[:10]}_torchrun-{run_id}"
    job = os.environ.get("SLURM_JOB_ID")
    if job and int(os.environ.get("SLURM_NTASKS", "1")) > 1:  # srun: one task a rank
        return f"{str(stamp)[:10]}_slurm-{job}-{os.environ.get('SLURM_STEP_ID', '0')}"
    if ranks > 1 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        return rank_zeros_stamp(str(stamp), agent_store(), int(os.environ.get("RANK", "0")))
    return str(stamp)


STAMP_KEY = "luong_lit/run_name"  #: the store key of rank 0's start time
_shared: dict[str, str] = {}  #: this process's answer, once it has one


def agent_store():  # pragma: no cover - needs torchrun's agent
    """A client of the key-value store torchrun's agent serves to its workers."""
    import os
    from datetime import timedelta

    from torch.distributed import TCPStore

    return TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                    timeout=timedelta(seconds=120), use_libuv=True)  # fmt: skip


def rank_zeros_stamp(stamp: str, store, rank: int) -> str:
    """Rank 0's start time, the same in every rank: rank 0 puts its own on ``store`` (the first
    it put stands, however often Hydra asks), the others wait for it."""
    import os

    key = f"{STAMP_KEY}/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    if key not in _shared:
        found = store.compare_set(key, "", stamp) if rank == 0 else store.get(key)
        _shared[key] = found.decode() if isinstance(found, bytes) else str(found)
    return _shared[key]


#: what ``select_by`` may name (the dev metric a validation logs) and its better direction
DEV_METRICS = {"ppl": "min", "bleu": "max", "chrf": "max"}


def metric_mode(select_by: str) -> str:
    """``min`` or ``max``: the better direction of the dev metric ``select_by``."""
    if select_by not in DEV_METRICS:
        raise ConfigError(
            f"select_by={select_by} is not a dev metric a run logs: choose one of "
            f"{', '.join(DEV_METRICS)}"
        )
    return DEV_METRICS[select_by]


def register_resolvers() -> None:
    """Make the ``luong_lit.*`` resolvers known to OmegaConf (once per process), the paper's
    recipe's with them (:data:`luong_lit.paper.resolvers.RESOLVERS`)."""
    resolvers: dict[str, Callable[..., Any]] = {
        "luong_lit.n_jobs": n_jobs,
        "luong_lit.dirname": dirname,
        "luong_lit.run_name": run_name,
        "luong_lit.metric_mode": metric_mode,
        "luong_lit.slurm_gpus": slurm_gpus,
        "luong_lit.slurm_tasks": slurm_tasks,
        "luong_lit.wandb_group": wandb_group,
        "luong_lit.wandb_name": wandb_name,
        "luong_lit.wandb_tags": wandb_tags,
        **PAPER_RESOLVERS,
    }
    for name, fn in resolvers.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
