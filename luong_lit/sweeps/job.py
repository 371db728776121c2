"""A job of a ``-m`` sweep, as Hydra describes it to the job: its number, its sweep's directory,
its overrides and the launcher that runs it (:func:`sweep_job`). What the job takes for itself:
:mod:`luong_lit.sweeps.resources`; what it finds of an earlier try:
:class:`luong_lit.training.run_folder.RunFolder`; the configs' resolvers:
:mod:`luong_lit.sweeps.resolvers`.
"""

from __future__ import annotations

from dataclasses import dataclass


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
