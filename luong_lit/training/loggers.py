"""The loggers of a run, and pictures and sample tables sent to whichever are active.

CSV keeps only scalars (the PNG files stay in the run directory); TensorBoard gets images and
a Markdown table of samples; W&B gets images and a ``wandb.Table``.

A resumed run continues its logs: :class:`ResumableCSVLogger` keeps ``metrics.csv`` (Lightning's
logger would delete it) and :class:`ResumedLogs` cuts it back to the rows up to the step of
the checkpoint, which the resumed run then continues; :class:`ResumableWandbLogger` continues
the same W&B run (its id follows from the run directory). TensorBoard writes a new event file
beside the old ones, and reads them all.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import lightning as L
from lightning.pytorch.loggers import CSVLogger, WandbLogger

from luong_lit.training.lightning_internals import (
    KeptCSVWriter,
    csv_experiment,
    drop_unset_wandb_anonymous,
)
from luong_lit.training.progress import is_terminal

log = logging.getLogger(__name__)


class _AppendingWriter(KeptCSVWriter):
    """Lightning's CSV writer, but an existing ``metrics.csv`` is kept and appended to."""

    def _rows(self) -> list[dict] | None:
        """The rows of ``metrics.csv``, or None where there is none yet."""
        if not os.path.isfile(self.metrics_file_path):
            return None
        with open(self.metrics_file_path, newline="") as fh:
            return list(csv.DictReader(fh))

    def _rewrite(self, keys: Sequence[str], rows: Sequence[dict]) -> None:
        """Write ``metrics.csv`` anew, whole or not at all (a temporary file, then a rename)."""
        tmp = self.metrics_file_path + ".tmp"
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=keys)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.metrics_file_path)

    def save(self) -> None:
        """Write the rows logged since the last save: appended when the file's columns are
        theirs, else the file rewritten whole with every column of both. The columns on disk
        are read each time, so that a writer made in another process (a ``ddp_spawn`` rank,
        a test after a spawned fit) never drops or misaligns those another one wrote."""
        if not self.metrics:
            return
        rows = self._rows()
        on_disk = list(rows[0].keys()) if rows else self._header()
        keys = sorted(set(on_disk) | set(self.metrics_keys) | {k for m in self.metrics for k in m})
        if rows is not None and on_disk == keys:
            with open(self.metrics_file_path, "a", newline="") as fh:
                csv.DictWriter(fh, fieldnames=keys).writerows(self.metrics)
        else:
            self._rewrite(keys, [*(rows or []), *self.metrics])
        self.metrics_keys, self.metrics = keys, []

    def _header(self) -> list[str]:
        if not os.path.isfile(self.metrics_file_path):
            return []
        with open(self.metrics_file_path, newline="") as fh:
            return list(csv.DictReader(fh).fieldnames or [])

    def keep_until(self, step: int) -> None:
        """Drop the rows logged after ``step``: a resumed run logs those steps again."""
        rows = self._rows()
        if rows is not None:
            kept = [r for r in rows if r.get("step") and int(r["step"]) <= step]
            self._rewrite(self.metrics_keys, kept)

    def add_missing(self, row: dict) -> None:
        """Append ``row`` (``epoch``, ``step`` and metrics) unless the log has its step's loss."""
        rows = self._rows()
        step = str(row["step"])
        if rows is None or any(r.get("step") == step and r.get("train/loss") for r in rows):
            return
        keys = list(self.metrics_keys) or sorted(row)
        if not set(row) <= set(keys):
            return  # a log of other columns: left as it is
        rows.append({k: row.get(k, "") for k in keys})
        rows.sort(key=lambda r: int(r["step"]) if r.get("step") else -1)
        self._rewrite(keys, rows)


class ResumableCSVLogger(CSVLogger):
    """``CSVLogger`` whose ``metrics.csv`` survives a resume (see the module doc)."""

    @property
    def experiment(self) -> _AppendingWriter:
        return csv_experiment(self, _AppendingWriter)


class ResumableWandbLogger(WandbLogger):
    """``WandbLogger`` that a resumed run continues: its run id follows from the run directory.

    Written to a file (not a terminal), W&B prints nothing of its own (``settings.silent``: its
    service colours its lines even there) and the run's log says in one line where the W&B run
    is, and how to upload an offline one."""

    def __init__(self, save_dir: str, **kwargs) -> None:
        run_id = hashlib.sha1(str(Path(save_dir).resolve()).encode()).hexdigest()[:16]
        kwargs.setdefault("id", run_id)
        kwargs.setdefault("resume", "allow")
        self._told = is_terminal() or not isinstance(kwargs.get("settings") or {}, dict)
        if not self._told:
            kwargs["settings"] = {"silent": True, **(kwargs.get("settings") or {})}
        super().__init__(save_dir=save_dir, **kwargs)
        drop_unset_wandb_anonymous(self)  # wandb warns of the key, even unset

    @property
    def experiment(self):
        run = WandbLogger.experiment.fget(self)
        if not self._told and hasattr(run, "offline"):  # rank 0's run (not a stand-in)
            self._told = True
            if run.offline:
                where = Path(run.dir).parent  # the run's folder: wandb/offline-run-...
                log.info("W&B run saved offline in %s (upload it: wandb sync %s)", where, where)
            else:
                log.info("W&B run: %s", run.url)
        return run


#: the metrics of a training step that a checkpoint written at its end keeps (see below)
STEP_METRICS = ("train/loss", "train/lr")


class ResumedLogs(L.Callback):
    """When training starts, a CSV log is cut back to the rows of the steps trained so far: on
    resume, those the checkpoint holds, and a fresh run starts from an empty file. Every
    checkpoint flushes the logs first, so a run killed after it keeps what it had logged.

    A checkpoint written at the end of a training step is written before that step's row is
    logged (Lightning logs a step's metrics after its ``on_train_batch_end``), so it also keeps
    that step's :data:`STEP_METRICS`: a run killed before the row reached the file writes it
    when it resumes, and its log loses no step."""

    def __init__(self) -> None:
        self.pending: dict | None = None

    def on_train_start(self, trainer, pl_module) -> None:
        for logger in trainer.loggers:
            if isinstance(logger, ResumableCSVLogger) and trainer.is_global_zero:
                # the rows of the steps the checkpoint holds (rows 0 to global_step - 1; a
                # validation after them logs at the last one's): a step trained after it and
                # logged before a kill is trained and logged again
                logger.experiment.keep_until(trainer.global_step - 1)
                if self.pending:
                    logger.experiment.add_missing(self.pending)
        self.pending = None

    def on_save_checkpoint(self, trainer, pl_module, checkpoint) -> None:
        for logger in trainer.loggers:
            if trainer.is_global_zero:
                logger.save()
        logged = trainer.global_step and trainer.global_step % trainer.log_every_n_steps == 0
        found = {k: float(v) for k, v in trainer.callback_metrics.items() if k in STEP_METRICS}
        if found and logged:  # a step whose row Lightning writes (every log_every_n_steps)
            step = {"epoch": trainer.current_epoch, "step": trainer.global_step - 1}
            checkpoint["luong_lit_last_step_log"] = {**step, **found}

    def on_load_checkpoint(self, trainer, pl_module, checkpoint) -> None:
        self.pending = checkpoint.get("luong_lit_last_step_log")


def _kind(logger) -> str:
    return type(logger).__name__


def log_image(trainer, key: str, path: str | Path, step: int) -> None:
    """Log the PNG at ``path`` under ``key`` to every logger that takes images."""
    for logger in trainer.loggers:
        if _kind(logger) == "WandbLogger":
            logger.log_image(key=key, images=[str(path)], step=step)
        elif _kind(logger) == "TensorBoardLogger":
            import matplotlib.image as mpimg

            img = mpimg.imread(str(path))[..., :3]  # (H, W, 3) floats in [0, 1]
            logger.experiment.add_image(key, img, global_step=step, dataformats="HWC")


def log_samples(
    trainer, key: str, columns: Sequence[str], rows: Sequence[Sequence[str]], step: int
) -> None:
    """A table of sample translations (source, reference, hypothesis)."""
    for logger in trainer.loggers:
        if _kind(logger) == "WandbLogger":
            logger.log_text(key=key, columns=list(columns), data=[list(r) for r in rows], step=step)
        elif _kind(logger) == "TensorBoardLogger":
            head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
            body = "".join(
                "| " + " | ".join(x.replace("|", "\\|") for x in r) + " |\n" for r in rows
            )
            logger.experiment.add_text(key, head + body, global_step=step)
