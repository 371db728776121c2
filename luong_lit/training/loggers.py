"""Send pictures and sample tables to whichever Lightning loggers are active.

CSV keeps only scalars (the PNG files stay in the run directory); TensorBoard gets images and
a Markdown table of samples; W&B gets images and a ``wandb.Table``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


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
