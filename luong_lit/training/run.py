"""A training run from its composed config: fit (resuming where an earlier try stopped), test the
best checkpoint, write ``results.json``; and what a sweeper optimises.

``python -m luong_lit train`` runs :func:`train` inside its Hydra app
(:mod:`luong_lit.commands.train`); tests and notebooks call it with a config of their own.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from luong_lit.plugins import load_plugins
from luong_lit.quiet import quiet
from luong_lit.runtime import configure_cpu_from
from luong_lit.sweeps.resources import job_resources
from luong_lit.training.lost_ranks import RankLost, is_lost_peer, lost_ranks
from luong_lit.training.precision import note_cpu_mixed
from luong_lit.training.results import objective, test_results, untested
from luong_lit.training.resume import LAST
from luong_lit.training.run_folder import RunFolder
from luong_lit.training.signals import (
    SIGNALS,
    SignalCheckpoint,
    SpawnedRanks,
    StoppedOutsideLoops,
)

log = logging.getLogger(__name__)


#: the moments a signal may end a run at, besides its training (:class:`Interrupted`)
STAGES = ("setup", "training", "test", "finished")


class Interrupted(Exception):
    """A run stopped by a signal: in its ``stage`` (:data:`STAGES`: before training began, in
    training, after it and in the test, or after ``results.json``), ``last.ckpt`` the last
    finished step (``checkpoint``); ``handover``: submitit's handler for its requeue signal,
    to be called now that the checkpoint is written."""

    def __init__(self, signum: int, checkpoint: Path, handover=None, stage: str = "training"):
        super().__init__(f"stopped by signal {signum}")
        self.signum, self.checkpoint, self.handover = signum, checkpoint, handover
        self.stage = stage

    @property
    def testing(self) -> bool:  # training is complete: the resume runs the test alone
        return self.stage == "test"


def _stop_of(trainer) -> SignalCheckpoint | None:
    return next((c for c in trainer.callbacks if isinstance(c, SignalCheckpoint)), None)


def _fit(model, dm, trainer, ckpt_path) -> None:
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    stop = _stop_of(trainer)
    where = stop.path if stop else Path()
    try:
        with SpawnedRanks(trainer) as parent:
            trainer.fit(model, dm, ckpt_path=ckpt_path)
    except SIGTERMException:
        raise Interrupted(stop.signal or 15, where, SIGNALS.handover) from None
    except Exception as err:  # a spawned rank stopped on a signal: as if this process had
        if is_lost_peer(err, trainer):
            raise RankLost(lost_ranks(trainer), where) from None
        if not SpawnedRanks.stopped_by_signal(err):
            raise
        raise Interrupted(parent.signal or 15, where) from None
    if stop is not None and stop.signal:  # the signal came as the last step ended
        raise Interrupted(stop.signal, stop.path, SIGNALS.handover)


def train(cfg: DictConfig) -> dict[str, Any]:
    """Open the run's folder, then build, fit (resuming where it says), test the best checkpoint
    and finish (``results.json``); a signal at any moment of it ends it with
    :class:`Interrupted`."""
    from luong_lit.sweeps.resolvers import register_resolvers

    register_resolvers()  # a config composed elsewhere (a test, a notebook) resolves ours too
    load_plugins()  # a sweep's job or a rank in a process of its own: the user's parts too
    folder = RunFolder.open(cfg)
    if folder.kind == "finished":  # no GPU slot taken, its job.json left as it was
        return folder.finished_metrics()
    SIGNALS.install(alone=not data_parallel(cfg))
    try:
        if SIGNALS.alone and SIGNALS.pending:  # it came as the process started
            raise StoppedOutsideLoops(SIGNALS.pending, "setup")
        metrics = _run(cfg, folder)
    except StoppedOutsideLoops as stop:
        raise Interrupted(stop.signum, folder.path / LAST, SIGNALS.handover, stop.stage) from None
    finally:
        SIGNALS.uninstall()
    if SIGNALS.pending:  # it came as the run ended, results.json written
        raise Interrupted(SIGNALS.pending, folder.path / LAST, SIGNALS.handover, "finished")
    return metrics


def _run(cfg: DictConfig, folder: RunFolder) -> dict[str, Any]:
    from luong_lit.training.build import build

    SIGNALS.stage = "setup"
    quiet(resuming=folder.kind == "resume")
    folder.check(cfg)  # another model's checkpoint: one line, before any work
    with job_resources(cfg) as record:  # in a sweep: the job's GPU and threads
        configure_cpu_from(cfg)
        dm, model, trainer = build(cfg, folder.checkpoint(cfg))
        note_cpu_mixed(trainer)
        note_data_parallel(trainer, cfg)
        folder.say_start(cfg)
        _fit(model, dm, trainer, folder.ckpt_path)
        SIGNALS.stage = "test"
        metrics = _finish(cfg, dm, model, trainer)
        SIGNALS.stage = "finished"
        record["objective"] = metrics["objective"]
        return metrics


def data_parallel(cfg: DictConfig) -> bool:
    """Whether the config trains on several ranks (a ``ddp`` strategy, or several devices or
    nodes), before the trainer that knows it exists."""
    t = cfg.trainer
    devices, nodes = t.get("devices", 1), t.get("num_nodes", 1) or 1
    several = (isinstance(devices, int) and devices > 1) or (
        hasattr(devices, "__len__") and not isinstance(devices, str) and len(devices) > 1
    )
    return "ddp" in str(t.get("strategy", "")) or several or int(nodes) > 1


def note_data_parallel(trainer, cfg: DictConfig) -> None:
    """One line at the start of a data-parallel run: what a step's batch is, every rank's."""
    ranks = trainer.world_size
    if ranks > 1 and trainer.is_global_zero:
        each, unit = cfg.data.batch_size, cfg.data.get("batch_by", "sentences")
        log.info(
            "data-parallel: %d ranks x %s %s (data.batch_size, each rank's) = %s %s a step",
            ranks, each, unit, ranks * int(each), unit,
        )  # fmt: skip


def _tested(dm, model, trainer) -> dict[str, Any]:
    """:func:`test_results`; a signal during the test stops it (training is complete and saved):
    :class:`Interrupted`, whose resume runs the test alone."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    stop = _stop_of(trainer)
    where = stop.path if stop else Path()
    try:
        return test_results(dm, model, trainer)
    except SIGTERMException:
        signum = (stop.signal if stop else None) or SIGNALS.pending or 15
        raise Interrupted(signum, where, None, "test") from None
    except Exception as err:
        if is_lost_peer(err, trainer):
            raise RankLost(lost_ranks(trainer), where) from None
        raise


def _finish(cfg: DictConfig, dm, model, trainer) -> dict[str, Any]:
    metrics: dict[str, Any] = {k: float(v) for k, v in trainer.callback_metrics.items()}
    metrics["objective"] = objective(cfg, trainer)
    tested = bool(cfg.get("test_after_training") and dm.test_spec)
    results = _tested(dm, model, trainer) if tested else untested(trainer)
    results["objective"] = cfg.get("objective", "val/ppl")
    results["objective_value"] = metrics["objective"]
    if trainer.is_global_zero:  # a finished run: sweeps and resumes read it so
        (Path(cfg.paths.output_dir) / "results.json").write_text(json.dumps(results, indent=2))
    metrics["test"] = results
    return metrics
