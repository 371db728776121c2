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


class _AppendingWriter(KeptCSVWriter):
    """Lightning's CSV writer, but an existing ``metrics.csv`` is kept and appended to."""

    def keep_until(self, step: int) -> None:
        """Drop the rows logged after ``step``: a resumed run logs those steps again."""
        if not os.path.isfile(self.metrics_file_path):
            return
        with open(self.metrics_file_path, newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("step") and int(r["step"]) <= step]
        tmp = self.metrics_file_path + ".tmp"
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=self.metrics_keys)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.metrics_file_path)


class ResumableCSVLogger(CSVLogger):
    """``CSVLogger`` whose ``metrics.csv`` survives a resume (see the module doc)."""

    @property
    def experiment(self) -> _AppendingWriter:
        return csv_experiment(self, _AppendingWriter)


class ResumableWandbLogger(WandbLogger):
    """``WandbLogger`` that a resumed run continues: its run id follows from the run directory."""

    def __init__(self, save_dir: str, **kwargs) -> None:
        run_id = hashlib.sha1(str(Path(save_dir).resolve()).encode()).hexdigest()[:16]
        kwargs.setdefault("id", run_id)
        kwargs.setdefault("resume", "allow")
        super().__init__(save_dir=save_dir, **kwargs)
        drop_unset_wandb_anonymous(self)  # wandb warns of the key, even unset


class ResumedLogs(L.Callback):
    """When training starts, a CSV log is cut back to the rows up to the current step: all of it
    is kept on resume up to the checkpoint, and a fresh run starts from an empty file. Every
    checkpoint flushes the logs first, so a run killed after it keeps what it had logged."""

    def on_train_start(self, trainer, pl_module) -> None:
        for logger in trainer.loggers:
            if isinstance(logger, ResumableCSVLogger) and trainer.is_global_zero:
                logger.experiment.keep_until(trainer.global_step if trainer.global_step else -1)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint) -> None:
        for logger in trainer.loggers:
            if trainer.is_global_zero:
                logger.save()


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
