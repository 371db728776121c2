"""What a run says of itself: the line it starts with (its folder, the command that resumes it),
the lines it ends with (the checkpoint to use and the command that translates with it), the line
of a run stopped by a signal, and the run folder's housekeeping (a refused run's folder
removed, a line for ``train.log`` alone)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from luong_lit.reports import current_name
from luong_lit.sweeps.dirnames import sweep_command
from luong_lit.sweeps.job import sweep_job
from luong_lit.training.run_folder import resume_command
from luong_lit.training.stopping import MONITORABLE

log = logging.getLogger(__name__)


def chosen_by(run_dir: Path) -> str:
    """What the run's ``best.ckpt`` is best by, from the config saved in its folder."""
    saved = Path(run_dir) / ".hydra" / "config.yaml"
    try:
        monitor = str(OmegaConf.load(saved).callbacks.model_checkpoint.monitor)
    except Exception:  # noqa: BLE001 - no saved config, or one without the key
        monitor = "val/ppl"
    return MONITORABLE.get(current_name(monitor) or monitor, monitor)  # an older run's name too


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


def interrupted_message(signum: int, checkpoint: Path, stage: str = "training") -> str:
    """What a run stopped by a signal says: the checkpoint saved, and the whole command that
    resumes it (its settings are read from its folder), or its sweep. ``stage``: ``training``;
    ``setup`` (before training began: nothing of this try was trained); ``test`` (during the
    final test, after training had finished: the resume runs the test alone); ``finished``
    (after ``results.json``: nothing is lost)."""
    run_dir = Path(checkpoint).resolve().parent.parent
    what = "resume the sweep" if sweep_job() is not None else "resume"
    if stage == "finished":
        done = run_dir / "results.json"
        return (f"signal {signum} came as the run ended: it has finished ({done} is complete), "
                f"and nothing is left to resume")  # fmt: skip
    if stage == "setup":
        kept = (f"{checkpoint} is as it was" if Path(checkpoint).is_file()
                else "no checkpoint was written")  # fmt: skip
        return (f"interrupted by signal {signum} before training began: nothing of this try "
                f"was trained ({kept}); {what} with: {_resumes(run_dir)}")  # fmt: skip
    if stage == "test":
        return (
            f"interrupted by signal {signum} during the final test: training is complete "
            f"({checkpoint}), the test sets are not scored yet; {what} (it runs the test "
            f"alone) with: {_resumes(run_dir)}"
        )
    from luong_lit.training.folders import step_of

    if step_of(Path(checkpoint)) == "0":  # the ranks agreed before their first step
        return (f"interrupted by signal {signum} before training began: nothing was trained "
                f"yet (the run's start is saved in {checkpoint}); {what} with: "
                f"{_resumes(run_dir)}")  # fmt: skip
    return (
        f"interrupted by signal {signum}: the last finished step is saved in {checkpoint}; "
        f"{what} with: {_resumes(run_dir)}"
    )
