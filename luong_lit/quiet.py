"""A run prints the kit's lines and real warnings, not the libraries' routine notices.

Each filter names the one message it drops and why it tells a user nothing here:

* Lightning's tip to install ``litlogger`` (an advertisement, on every trainer);
* Lightning's ``GPU available: ..., used: ...``, ``TPU available`` and ``HPU available`` lines,
  on every run: the device a run uses is its ``trainer`` option (a GPU left unused still
  gets Lightning's warning, which stays);
* torch's ``LeafSpec`` deprecation (raised inside Lightning's own code, not ours);
* ``ModelCheckpoint(monitor='val/ppl') could not find the monitored key`` before the first
  validation: a short run has no ``best.ckpt`` yet, and its last lines say which checkpoint to
  use (:func:`luong_lit.training.run.done_message`);
* Lightning's advice to log an epoch's figures with ``sync_dist=True`` in a data-parallel run:
  the kit's dev and test figures are computed from every rank's share already (summed
  metrics, gathered translations: :mod:`luong_lit.training.sharded`), the same on every rank;
* Hydra's "validated against ConfigStore schema" notice about its own launchers' configs (a
  joblib worker imports the app's module, and with it this filter, before Hydra loads them);
* on a resume only (``quiet(resuming=True)``), Lightning's "Checkpoint directory ... exists
  and is not empty": the run's own folder, where the resumed run belongs.

W&B's own lines are its settings' business
(:class:`~luong_lit.training.loggers.ResumableWandbLogger`).
"""

from __future__ import annotations

import logging
import warnings

DROPPED_WARNINGS = (
    r"(?s).*isinstance\(treespec, LeafSpec\)` is deprecated",
    r"(?s).*ModelCheckpoint\(monitor='val/ppl'\)`? could not find the monitored key",
    r"(?s).*is validated against ConfigStore schema",
    r"(?s)It is recommended to use `self\.log\('(val|test)/.*sync_dist=True",
)
RESUME_WARNINGS = (r"(?s)Checkpoint directory .* exists and is not empty",)
DROPPED_LINES = (
    "try installing [litlogger]",
    "GPU available: ",
    "TPU available: ",
    "HPU available: ",
)
RANK_ZERO_LOGGERS = (
    "lightning.pytorch.utilities.rank_zero",
    "lightning_fabric.utilities.rank_zero",
)


class _DropRoutine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in DROPPED_LINES)


def quiet(resuming: bool = False) -> None:
    """Install the filters (idempotent); ``resuming``: those of a resumed run too."""
    for pattern in DROPPED_WARNINGS + (RESUME_WARNINGS if resuming else ()):
        warnings.filterwarnings("ignore", message=pattern)
    for name in RANK_ZERO_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropRoutine) for f in logger.filters):
            logger.addFilter(_DropRoutine())
