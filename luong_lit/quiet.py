"""A run prints the kit's lines and real warnings, not the libraries' routine notices.

Each filter names the one message it drops and why it tells a user nothing here:

* Lightning's tip to install ``litlogger`` (an advertisement, on every trainer);
* Lightning's ``GPU available: ..., used: ...``, ``TPU available`` and ``HPU available`` lines,
  on every run: the device a run uses is its ``trainer`` option (a GPU left unused still
  gets Lightning's warning, which stays);
* torch's ``LeafSpec`` deprecation (raised inside Lightning's own code, not ours);
* ``ModelCheckpoint(monitor='val/ppl') could not find the monitored key`` before the first
  validation: a short run has no ``best.ckpt`` yet, and its last lines say which checkpoint to
  use (:func:`luong_lit.training.run_lines.done_message`);
* Lightning's advice to log an epoch's figures with ``sync_dist=True`` in a data-parallel run:
  the kit's dev and test figures are computed from every rank's share already (summed
  metrics, gathered translations: :mod:`luong_lit.training.sharded`), the same on every rank;
* Hydra's "validated against ConfigStore schema" notice about its own launchers' configs (a
  joblib worker imports the app's module, and with it this filter, before Hydra loads them);
* on a resume only (``quiet(resuming=True)``), Lightning's "Checkpoint directory ... exists
  and is not empty": the run's own folder, where the resumed run belongs;
* Lightning's lines as it restores a checkpoint ("Restoring states from the checkpoint
  path", "Restored all states", "Loaded model weights", the weight averaging's "Found
  current_model_state"): a resume says in its own line what it resumes and at which step, and
  the final test's checkpoint is named in ``results.json``;
* Lightning's "Received SIGTERM" and "Trainer.fit stopped" lines: a run stopped by a signal
  ends with its own line (what was saved, and the command that resumes it), and one that ends
  by its budget, early stopping or its schedule says so in the kit's lines;
* Lightning's note that ``configure_callbacks`` replaces a callback: the schedules' own
  callback, added once (:mod:`luong_lit.training.lr_steps`).

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
    "Restoring states from the checkpoint path at ",
    "Restored all states from the checkpoint at ",
    "Loaded model weights from the checkpoint at ",
    "Found current_model_state in the checkpoint",
    "Received SIGTERM: ",
    "`Trainer.fit` stopped: ",
    "callbacks returned in `LightningModule.configure_callbacks` will override",
)
RANK_ZERO_LOGGERS = (
    "lightning.pytorch.utilities.rank_zero",
    "lightning_fabric.utilities.rank_zero",
    "lightning.pytorch.trainer.connectors.signal_connector",
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
