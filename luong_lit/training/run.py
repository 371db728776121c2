"""A training run from its composed config: fit (resuming where an earlier try stopped), test the
best checkpoint, write ``results.json``; and what a sweeper optimises.

``python -m luong_lit train`` runs :func:`train` inside its Hydra app
(:mod:`luong_lit.commands.train`); tests and notebooks call it with a config of their own.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from luong_lit.checkpoint.resumable import check_resumable, resumed_checkpoint
from luong_lit.metrics.signatures import figure_signatures
from luong_lit.plugins import load_plugins
from luong_lit.quiet import quiet
from luong_lit.runtime import configure_cpu_from
from luong_lit.sweeps.dirnames import sweep_command
from luong_lit.sweeps.earlier import earlier_work
from luong_lit.sweeps.job import sweep_job
from luong_lit.sweeps.resources import job_resources
from luong_lit.training.folders import give_run_folder, step_of
from luong_lit.training.precision import note_cpu_mixed
from luong_lit.training.resume import LAST, nothing_to_resume, resume_command
from luong_lit.training.signals import SignalCheckpoint, SpawnedRanks

log = logging.getLogger(__name__)


def test_results(dm, model, trainer) -> dict[str, Any]:
    """``trainer.test`` on every test set with the best checkpoint (or the final weights), as
    ``{"checkpoint": name, <test set>: {"ppl": ..., "bleu_greedy": ..., ...}}``."""
    best = getattr(trainer.checkpoint_callback, "best_model_path", "") or None
    metrics: dict[str, float] = {}
    for part in trainer.test(model, datamodule=dm, ckpt_path=best, verbose=False):
        metrics.update(part)
    results: dict[str, Any] = {"checkpoint": Path(best).name if best else "final weights"}
    dev = best_dev_ppl(trainer)
    if dev is not None:
        results["dev_ppl"] = dev  # the best checkpoint's
    for key, value in sorted(metrics.items()):
        _, name, metric = key.split("/", 2)  # test/<name>/<metric>
        results.setdefault(name, {})[metric] = float(value)
    for name, exact in getattr(model, "test_figures", {}).items():  # as computed, not float32
        results.setdefault(name, {}).update(exact)
    for figures in (v for v in results.values() if isinstance(v, dict)):
        for key in ("sentences_ppl", "sentences_bleu"):
            if key in figures:
                figures[key] = int(figures[key])
    results.update(figure_signatures(metrics))  # "chrf_signature": sacreBLEU's, ...
    for name in dm.test_spec:
        log.info(
            "test %s: %s",
            name,
            ", ".join(
                f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                for k, v in results.get(name, {}).items()
            ),
        )
    return results


class Interrupted(Exception):
    """Training stopped by a signal after saving ``last.ckpt``; ``handover``: submitit's
    handler for its requeue signal, to be called now that the checkpoint is written."""

    def __init__(self, signum: int, checkpoint: Path, handover=None, testing=False) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum, self.checkpoint, self.handover = signum, checkpoint, handover
        self.testing = testing  # during the final test: training is complete


def _fit(model, dm, trainer, ckpt_path) -> None:
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    try:
        with SpawnedRanks(trainer) as parent:
            trainer.fit(model, dm, ckpt_path=ckpt_path)
    except Exception as err:  # a spawned rank stopped on a signal: as if this process had
        if not SpawnedRanks.stopped_by_signal(err):
            raise
        stop = next((c for c in trainer.callbacks if isinstance(c, SignalCheckpoint)), None)
        raise Interrupted(parent.signal or 15, stop.path if stop else Path()) from None
    except SIGTERMException:
        stop = next((c for c in trainer.callbacks if isinstance(c, SignalCheckpoint)), None)
        raise Interrupted(
            stop.signal if stop and stop.signal else 15,
            stop.path if stop else Path(),
            stop.handover if stop else None,
        ) from None
    stop = next(
        (c for c in trainer.callbacks if isinstance(c, SignalCheckpoint) and c.signal), None
    )
    if stop is not None:  # the signal came as the last step ended
        raise Interrupted(stop.signal, stop.path, stop.handover)


def train(cfg: DictConfig) -> dict[str, Any]:
    """Fit (resuming if ``ckpt_path`` is set), then test the best checkpoint on the test sets."""
    from luong_lit.sweeps.resolvers import register_resolvers
    from luong_lit.training import finetune
    from luong_lit.training.build import build

    register_resolvers()  # a config composed elsewhere (a test, a notebook) resolves ours too
    load_plugins()  # a sweep's job or a rank in a process of its own: the user's parts too
    give_run_folder(cfg)  # composed outside a Hydra app: a folder of its own, as Hydra gives
    earlier = earlier_work(cfg)
    if earlier and earlier[0] == "done":  # no GPU slot taken, its job.json left as it was
        log.info("%s holds a finished run: not trained again", cfg.paths.output_dir)
        return {"test": earlier[1], "objective": earlier[1].get("objective_value")}
    ckpt_path = earlier[1] if earlier else cfg.get("ckpt_path")
    quiet(resuming=bool(ckpt_path))
    out = Path(cfg.paths.output_dir)
    if ckpt_path == "last" and sweep_job() is None and not (out / LAST).is_file():
        raise nothing_to_resume(out, cfg.paths.log_dir, cfg.get("task_name", "train"))
    finetune.source_of(cfg)  # a fine-tuned run's model is its checkpoint's, read now
    check_resumable(cfg, ckpt_path)  # another model's checkpoint: one line, before any work
    with job_resources(cfg) as record:  # in a sweep: the job's GPU and threads
        configure_cpu_from(cfg)
        resuming = resumed_checkpoint(cfg, ckpt_path) if ckpt_path else None
        dm, model, trainer = build(cfg, resuming if resuming and resuming.is_file() else None)
        note_cpu_mixed(trainer)
        note_data_parallel(trainer, cfg)
        if ckpt_path:
            path = resumed_checkpoint(cfg, ckpt_path)
            step = step_of(path) if path and path.is_file() else "?"
            log.info("resuming %sfrom %s at step %s", "this sweep job " if earlier else "",
                     path or ckpt_path, step)  # fmt: skip
        _fit(model, dm, trainer, ckpt_path)
        metrics = _finish(cfg, dm, model, trainer)
        record["objective"] = metrics["objective"]
        return metrics


def note_data_parallel(trainer, cfg: DictConfig) -> None:
    """One line at the start of a data-parallel run: what a step's batch is, every rank's."""
    ranks = trainer.world_size
    if ranks > 1 and trainer.is_global_zero:
        each, unit = cfg.data.batch_size, cfg.data.get("batch_by", "sentences")
        log.info(
            "data-parallel: %d ranks x %s %s (data.batch_size, each rank's) = %s %s a step",
            ranks, each, unit, ranks * int(each), unit,
        )  # fmt: skip


def objective(cfg: DictConfig, trainer) -> float | None:
    """The value a sweeper optimises (``objective``): the best checkpoint's score when it is the
    checkpoint's monitor (``val/ppl``), else the metric's last value (``val/bleu``)."""
    name, ckpt = cfg.get("objective", "val/ppl"), trainer.checkpoint_callback
    if ckpt is not None and ckpt.monitor == name and ckpt.best_model_score is not None:
        return float(ckpt.best_model_score)
    if name == "val/ppl" and best_dev_ppl(trainer) is not None:  # trained in other processes
        return best_dev_ppl(trainer)
    value = trainer.callback_metrics.get(name)
    return None if value is None else float(value)


def untested(trainer) -> dict[str, Any]:
    """``results.json`` of a run that ends without a test: its best checkpoint and dev score."""
    ckpt = trainer.checkpoint_callback
    best = getattr(ckpt, "best_model_path", "") or None
    results: dict[str, Any] = {"checkpoint": Path(best).name if best else "final weights"}
    dev = best_dev_ppl(trainer)
    if dev is not None:
        results["dev_ppl"] = dev
    return results


def best_dev_ppl(trainer) -> float | None:
    """The best checkpoint's dev perplexity: the checkpoint callback's score, or, where this
    process did not train (``ddp_spawn``: its ranks did), the score ``best.ckpt`` keeps."""
    ckpt = trainer.checkpoint_callback
    if ckpt is None or ckpt.monitor != "val/ppl":
        return None
    if ckpt.best_model_score is not None:
        return float(ckpt.best_model_score)
    if not ckpt.best_model_path or not Path(ckpt.best_model_path).is_file():
        return None
    from luong_lit.checkpoint.files import read_checkpoint

    states = read_checkpoint(ckpt.best_model_path).get("callbacks", {})
    found = [
        v.get("best_model_score") for k, v in states.items() if k.startswith("ModelCheckpoint")
    ]
    score = next((x for x in found if x is not None), None)
    return None if score is None else float(score)


def _tested(dm, model, trainer) -> dict[str, Any]:
    """:func:`test_results`; a signal during the test stops it (training is complete and saved):
    :class:`Interrupted`, whose resume runs the test alone."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    try:
        return test_results(dm, model, trainer)
    except SIGTERMException:
        stop = next((c for c in trainer.callbacks if isinstance(c, SignalCheckpoint)), None)
        signum = stop.signal if stop and stop.signal else 15
        raise Interrupted(signum, stop.path if stop else Path(), None, testing=True) from None


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


#: the dev metrics ``best.ckpt`` may be chosen by, in words
CHOSEN_BY = {"val/ppl": "validation perplexity", "val/bleu": "validation BLEU (greedy)",
             "val/chrf": "validation chrF (greedy)", "val/nll_per_token": "validation NLL",
             "val/bleu_beam": "validation BLEU (beam)",
             "val/bleu_unk_beam": "validation BLEU (beam, unk replaced)"}  # fmt: skip


def chosen_by(run_dir: Path) -> str:
    """What the run's ``best.ckpt`` is best by, from the config saved in its folder."""
    saved = Path(run_dir) / ".hydra" / "config.yaml"
    try:
        monitor = str(OmegaConf.load(saved).callbacks.model_checkpoint.monitor)
    except Exception:  # noqa: BLE001 - no saved config, or one without the key
        monitor = "val/ppl"
    return CHOSEN_BY.get(monitor, monitor)


def checkpoint_to_use(run_dir: Path) -> tuple[Path | None, str]:
    """The checkpoint a finished run hands to ``translate``: ``best.ckpt`` (best by the dev
    metric it was chosen by), or ``last.ckpt`` when no validation has run yet (a short run),
    and why."""
    folder = Path(run_dir) / "checkpoints"
    if (folder / "best.ckpt").is_file():
        return folder / "best.ckpt", f"best by {chosen_by(run_dir)}"
    if (folder / "last.ckpt").is_file():
        return folder / "last.ckpt", "no validation has run yet, so no best.ckpt: the last step's"
    return None, "no checkpoint was written"


def tensorboard_hint(run_dir: Path) -> list[str]:
    """``tensorboard --logdir ...`` for a run that logs to TensorBoard (``logger=tensorboard``
    or ``many``, read from the config Hydra saved in its folder); none for another run."""
    saved = Path(run_dir) / ".hydra" / "config.yaml"
    loggers = OmegaConf.load(saved).get("logger") if saved.is_file() else None
    if not isinstance(loggers, DictConfig):
        return []
    targets = [
        str(node.get("_target_"))
        for node in OmegaConf.to_container(loggers, resolve=False).values()
        if isinstance(node, dict)
    ]
    if not any(t.endswith(".TensorBoardLogger") for t in targets):
        return []
    return [f"see its curves with: tensorboard --logdir {Path(run_dir).resolve()}"]


def user_dirs() -> str:
    """`` --user-dir DIR`` for each folder of parts this run loaded (none: "")."""
    import os
    import shlex

    from luong_lit.plugins import USER_DIR_ENV

    found = [d for d in os.environ.get(USER_DIR_ENV, "").split(os.pathsep) if d]
    return "".join(f" --user-dir {shlex.quote(d)}" for d in found)


def done_message(run_dir: Path) -> str:
    """The lines a run ends with: its folder, the checkpoint to translate with, and where
    TensorBoard reads its logs (:func:`tensorboard_hint`)."""
    ckpt, why = checkpoint_to_use(run_dir)
    lines = [f"run folder: {Path(run_dir).resolve()}"]
    if ckpt is None:
        lines.append(f"checkpoint: none ({why})")
    else:
        lines.append(f"checkpoint to use: {ckpt.resolve()} ({why})")
        lines.append(f"translate with: python -m luong_lit translate{user_dirs()} {ckpt.resolve()}")
    return "\n".join(lines + tensorboard_hint(run_dir))


def holds_nothing(run_dir: Path) -> bool:
    """Whether a run folder holds nothing but what Hydra has just written into it (its config
    and an empty log): a command refused now leaves no folder behind."""
    log_file = run_dir / "train.log"
    extra = {p.name for p in run_dir.iterdir()} - {".hydra", "train.log"}
    return not extra and (not log_file.exists() or log_file.stat().st_size == 0)


def to_log_file(message: str, level: int = logging.WARNING) -> None:
    """``message`` in the run's log file (``train.log``) alone, not again on the terminal."""
    record = log.makeRecord(log.name, level, __file__, 0, message, None, None)
    for handler in logging.root.handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


def remove_run(run_dir: Path) -> None:
    """Delete a refused run's folder, its log file closed first."""
    for handler in list(logging.root.handlers):
        if (
            isinstance(handler, logging.FileHandler)
            and run_dir.resolve() in Path(handler.baseFilename).resolve().parents
        ):
            handler.close()
            logging.root.removeHandler(handler)
    shutil.rmtree(run_dir, ignore_errors=True)


def _resumes(run_dir: Path) -> str:
    """The command that picks the work up again: the run's own, or in a sweep's job the sweep's
    (its finished jobs skipped, this one resumed, the ones after it run)."""
    job = sweep_job()
    if job is not None:
        return sweep_command(job.sweep_dir)
    return resume_command(run_dir)


def start_message(run_dir: Path) -> str:
    """The line a run starts with (flushed at once, so that a run written to a file names its
    folder at the top): its folder, and the command that resumes it if it is stopped; then, for
    a run that logs to TensorBoard, the command that shows it (:func:`tensorboard_hint`)."""
    run_dir = Path(run_dir).resolve()
    what = "the sweep resumes" if sweep_job() is not None else "it resumes"
    first = f"run folder: {run_dir} (if it stops, {what} with: {_resumes(run_dir)})"
    return "\n".join([first, *tensorboard_hint(run_dir)])


def interrupted_message(signum: int, checkpoint: Path, testing: bool = False) -> str:
    """What a run stopped by a signal says: the checkpoint saved, and the whole command that
    resumes it (its settings are read from its folder), or its sweep; ``testing``: the signal
    came during the final test, after training had finished (the resume runs the test alone)."""
    run_dir = Path(checkpoint).resolve().parent.parent
    what = "resume the sweep" if sweep_job() is not None else "resume"
    if testing:
        return (
            f"interrupted by signal {signum} during the final test: training is complete "
            f"({checkpoint}), the test sets are not scored yet; {what} (it runs the test "
            f"alone) with: {_resumes(run_dir)}"
        )
    return (
        f"interrupted by signal {signum}: the last finished step is saved in {checkpoint}; "
        f"{what} with: {_resumes(run_dir)}"
    )
