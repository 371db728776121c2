"""A training run from its composed config: fit (resuming where an earlier try stopped), test the
best checkpoint, write ``results.json``; and what a sweeper optimises.

``python -m luong_lit train`` runs :func:`train` inside its Hydra app
(:mod:`luong_lit.commands.train`); tests and notebooks call it with a config of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from luong_lit.plugins import load_plugins
from luong_lit.reports import Results
from luong_lit.sweeps.resources import job_resources
from luong_lit.training.folders import LAST
from luong_lit.training.lost_ranks import RankLost, is_lost_peer, lost_ranks
from luong_lit.training.results import objective, test_results, untested
from luong_lit.training.run_folder import RunFolder
from luong_lit.training.signals import SIGNALS, SignalCheckpoint, StoppedOutsideLoops
from luong_lit.training.spawned_ranks import SpawnedRanks

log = logging.getLogger(__name__)


class Interrupted(Exception):
    """A run stopped by a signal in its ``stage`` (``setup``, ``training``, ``test`` or
    ``finished``: after ``results.json``), ``last.ckpt`` the last finished step
    (``checkpoint``); ``handover``: submitit's handler for its requeue signal, to be called now
    that the checkpoint is written."""

    def __init__(self, signum: int, checkpoint: Path, handover=None, stage: str = "training"):
        super().__init__(f"stopped by signal {signum}")
        self.signum, self.checkpoint, self.handover = signum, checkpoint, handover
        self.stage = stage


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
    from luong_lit.training.build import build

    register_resolvers()  # a config composed elsewhere (a test, a notebook) resolves ours too
    load_plugins()  # a sweep's job or a rank in a process of its own: the user's parts too
    with _stops(cfg):
        folder = RunFolder.open(cfg)  # a signal meanwhile is noted, and acted on just below
        if folder.finished is not None:  # no GPU slot taken, its job.json left as it was
            return folder.finished
        _opened()
        with job_resources(cfg) as record:  # a sweep's: its GPU, its threads
            dm, model, trainer = build(cfg, folder)
            folder.say_start(trainer, cfg.data)
            _fit(model, dm, trainer, folder.ckpt_path)
            metrics, results = _test(cfg, dm, model, trainer)
            folder.finish(results, trainer.is_global_zero)
            SIGNALS.stage = "finished"
            record["objective"] = metrics["objective"]
    return metrics


@contextmanager
def _stops(cfg: DictConfig) -> Iterator[None]:
    """The run's signal handler, for the run's whole life, from before its folder is opened (a
    signal while it is read is noted, and acted on once it is open: :func:`_opened`): a signal
    outside the trainer's loops (before training, after it, as it ends) is
    :class:`Interrupted` at its stage, its checkpoint the folder's ``last.ckpt``."""
    alone = not data_parallel(cfg)
    SIGNALS.install(alone=alone)
    SIGNALS.stage = "opening"  # noted, not acted on, while the folder's files are read
    try:
        yield
    except StoppedOutsideLoops as stop:
        raise Interrupted(stop.signum, _last(cfg), SIGNALS.handover, stop.stage) from None
    finally:
        SIGNALS.uninstall()
    if SIGNALS.pending:  # it came as the run ended, results.json written
        raise Interrupted(SIGNALS.pending, _last(cfg), SIGNALS.handover, "finished")


def _opened() -> None:
    """The run's folder is open: from now on a signal stops the run at once, and one that came
    as the process started or while the folder was read does so now."""
    SIGNALS.stage = "setup"
    if SIGNALS.alone and SIGNALS.pending:
        raise StoppedOutsideLoops(SIGNALS.pending, "setup")


def _last(cfg: DictConfig) -> Path:
    """The run's ``last.ckpt`` (its folder is given once :meth:`RunFolder.open` has run)."""
    return Path(str(cfg.paths.output_dir)) / LAST


def data_parallel(cfg: DictConfig) -> bool:
    """Whether the config trains on several ranks (a ``ddp`` strategy, or several devices or
    nodes), before the trainer that knows it exists."""
    t = cfg.trainer
    devices, nodes = t.get("devices", 1), t.get("num_nodes", 1) or 1
    several = (isinstance(devices, int) and devices > 1) or (
        hasattr(devices, "__len__") and not isinstance(devices, str) and len(devices) > 1
    )
    return "ddp" in str(t.get("strategy", "")) or several or int(nodes) > 1


def _tested(dm, model, trainer) -> Results:
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


def _test(cfg: DictConfig, dm, model, trainer) -> tuple[dict[str, Any], Results]:
    """The trainer's last metrics, the test of the best checkpoint (or what stands for it
    untested) and the objective: ``results.json``'s record, and its contents under ``test``."""
    SIGNALS.stage = "test"
    metrics: dict[str, Any] = {k: float(v) for k, v in trainer.callback_metrics.items()}
    tested = bool(cfg.get("test_after_training") and dm.test_spec)
    results = _tested(dm, model, trainer) if tested else untested(trainer)
    metrics["objective"] = objective(cfg, trainer, metrics)  # training's, read before the test
    chosen = cfg.get("objective", "val/ppl")
    results = replace(results, objective=chosen, objective_value=metrics["objective"])
    metrics["test"] = results.to_json()
    return metrics, results
