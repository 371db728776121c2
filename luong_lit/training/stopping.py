"""Choosing and stopping on a dev metric (``select_by``: perplexity, BLEU or chrF of the dev
set; :func:`~luong_lit.sweeps.resolvers.metric_mode`, a resolver of the configs, says whether
each is better higher or lower), the dev figures a callback may follow (:data:`MONITORABLE`), and
early stopping through Lightning's ``EarlyStopping`` (:class:`EarlyStopping`), off unless a
patience is given. ``best.ckpt`` (:class:`~luong_lit.training.best_checkpoint.BestCheckpoint`),
early stopping and the plateau schedules (:mod:`luong_lit.training.schedules`) follow the same
metric; a resumed run keeps the best score and the count of validations without improvement
(each callback's own state, in the checkpoint).
"""

from __future__ import annotations

from lightning.pytorch.callbacks import EarlyStopping as LightningEarlyStopping

from luong_lit.errors import ConfigError
from luong_lit.sweeps.resolvers import DEV_METRICS, metric_mode  # noqa: F401 - its home
from luong_lit.validate import integer, non_negative

#: every dev figure a run logs that a checkpoint or early stopping may follow
MONITORABLE = {
    "val/ppl": "min", "val/nll_per_token": "min", "val/bleu": "max", "val/chrf": "max",
    "val/bleu_beam": "max", "val/bleu_unk_beam": "max",
}  # fmt: skip


def check_monitor(option: str, monitor: str | None) -> None:
    """``monitor`` names a dev figure a run logs (None: none, where a callback allows it)."""
    if monitor is not None and monitor not in MONITORABLE:
        raise ConfigError(
            f"{option}={monitor} is not a figure a run logs: choose one of "
            f"{', '.join(MONITORABLE)} (select_by=ppl|bleu|chrf sets it for you)"
        )


class EarlyStopping(LightningEarlyStopping):
    """Lightning's ``EarlyStopping`` on the dev metric, off while ``patience`` is None: training
    stops after ``patience`` validations in a row without an improvement of at least
    ``min_delta``."""

    def __init__(self, monitor: str = "val/ppl", mode: str = "min", patience: int | None = None,
                 min_delta: float = 0.0) -> None:  # fmt: skip
        check_monitor("callbacks.early_stopping.monitor", monitor)
        integer("patience", patience, 1, nullable=True)
        non_negative("min_delta", min_delta)
        self.off = patience is None
        # checked after each validation (not at the epoch's end): the last.ckpt written after it
        # then keeps the count, and a resumed run stops where an unbroken one would
        super().__init__(monitor=monitor, mode=mode, patience=patience or 1, min_delta=min_delta,
                         check_finite=True, strict=not self.off,
                         check_on_train_epoch_end=False)  # fmt: skip

    def on_validation_end(self, trainer, pl_module) -> None:
        if not self.off:
            super().on_validation_end(trainer, pl_module)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if not self.off:
            super().on_train_epoch_end(trainer, pl_module)
