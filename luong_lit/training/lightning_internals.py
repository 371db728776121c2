"""Every use the kit makes of Lightning's non-public API, each in a small function that says why
it is needed and which public API is missing; the rest of the kit calls these functions and
never reaches into Lightning itself (``tests/test_layout.py`` checks it).

Lightning may change any of these in a minor release, so :func:`check_lightning_version`
refuses a Lightning outside the range they were written and tested for (:data:`TESTED`, the
pin of ``pyproject.toml``), in one line, where the trainer is built.

* :func:`request_stop`: stop after the current step, as on SIGTERM (a signal's checkpoint).
* :func:`leave_signals_to_the_kit`: Lightning installs no signal handler of its own.
* :func:`observe_ranks_gently`: Lightning's watch over the ranks it starts leaves a clean stop
  alone, and lets the first rank say that another was lost before it ends it.
* :func:`process_group_store`: torch's store of the ranks' process group (torch's own private
  name, here with Lightning's, so that the kit's reach into private code stays in one place).
* :func:`rewind_validation`: a checkpoint written during validation validates that epoch again.
* :class:`KeptCSVWriter` and :func:`csv_experiment`: a CSV log that survives a resume.
* :func:`drop_unset_wandb_anonymous`: no warning of an unset W&B option.
* :func:`optimizer_unscales_in_step`: Lightning's rule for the optimizers whose gradients it
  will not clip under mixed precision (torch's flag).
* :func:`averaged_model` and :func:`swap_averaged`: the weight averaging's model, and its
  swap with the module's weights (``WeightAveraging`` offers neither in its public API).
* :func:`submitit_requeue_signal`: the signal by which submitit asks for a requeue (submitit's,
  on the same path as Lightning's signal handling).
"""

from __future__ import annotations

import csv
import os
from typing import Any

from lightning.pytorch.loggers.csv_logs import ExperimentWriter

from luong_lit.errors import UserError

#: the Lightning versions this module is written and tested for (``pyproject.toml``'s pin)
TESTED = ">=2.6,<2.7"


def check_lightning_version(version: str | None = None) -> None:
    """Refuse, in one line, a Lightning outside :data:`TESTED` (``version``: the installed one's
    by default)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion

    if version is None:
        import lightning

        version = lightning.__version__
    try:
        tested = SpecifierSet(TESTED).contains(version, prereleases=True)
    except InvalidVersion:
        tested = False
    if not tested:
        raise UserError(
            f"lightning {version} is installed, and luong_lit is tested with lightning{TESTED} "
            f"(it relies on parts of Lightning that may change between its releases): "
            f"pip install 'lightning{TESTED}'"
        )


def request_stop(trainer) -> None:
    """Make ``trainer`` stop after the current step (or validation batch) as it does on SIGTERM:
    Lightning's loops then raise ``SIGTERMException``, and a checkpoint written there resumes
    exactly. ``Trainer.received_sigterm`` is read-only and set only by Lightning's own SIGTERM
    handler (its signal connector); the public ``Trainer.should_stop`` is honoured only at
    the loops' own checks (``min_steps`` can override it) and never interrupts a validation."""
    trainer._signal_connector.received_sigterm = True


def _no_handlers(connector) -> None:
    connector.received_sigterm = False  # all that Lightning's registration does that we keep


def leave_signals_to_the_kit(trainer) -> None:
    """Lightning registers its SIGTERM handler each time the trainer runs (fit, test), and
    restores the previous one after: a handler that stops one rank alone, kills the others
    through the launcher and runs a collective inside the handler. The kit's own is in charge
    for the whole run (:class:`~luong_lit.training.signals.RunSignals`); Lightning has no
    option to leave its out, so its private registration is replaced by one that only resets
    its flag (a partial of a module function: a trainer sent to spawned ranks pickles it)."""
    from functools import partial

    connector = trainer._signal_connector
    connector.register_signal_handlers = partial(_no_handlers, connector)


#: Lightning's key of the validation loop's progress in ``checkpoint["loops"]["fit_loop"]``
VAL_PROGRESS = "epoch_loop.val_loop.batch_progress"
BATCH_PROGRESS = "epoch_loop.batch_progress"


def rewind_validation(checkpoint: dict[str, Any]) -> None:
    """Make a checkpoint written during an epoch's validation validate that epoch again.

    As saved, the validation loop's progress counts the batches it finished, and a resumed
    Lightning run treats such a validation as done: the epoch would have no dev figure and no
    chance to become ``best.ckpt``. Progress that says one batch started and none finished is,
    for Lightning, a restart in the middle of an evaluation: the resumed run goes back and runs
    the epoch's validation, from its first batch, before the next epoch trains. Lightning has no
    public way to say a checkpoint's validation is unfinished: this edits the loops' state.
    """
    progress = checkpoint.get("loops", {}).get("fit_loop", {}).get(VAL_PROGRESS)
    if progress is None:  # a Lightning that keeps its loops otherwise: resume as saved
        return
    for part in ("total", "current"):
        progress[part].update(ready=1, started=1, processed=0, completed=0)
    progress["is_last_batch"] = False


def reopen_epoch(checkpoint: dict[str, Any]) -> None:
    """Make a checkpoint written as ``trainer.max_steps`` ended training in the middle of an
    epoch resume that epoch where it stopped.

    As saved, the fit loop counts the epoch as completed, so a run resumed with a larger
    ``max_steps`` would start the next epoch and never train the rest of this one. The loops'
    state is set to what a checkpoint written in the middle of the epoch holds (a step
    checkpoint's: the epoch started, not completed; its last batch not yet counted as
    completed), and the kit's loader, which knows the batches trained, serves the rest.
    """
    loops = checkpoint.get("loops", {}).get("fit_loop", {})
    epochs, batches = loops.get("epoch_progress"), loops.get(BATCH_PROGRESS)
    if epochs is None or batches is None:  # a Lightning that keeps its loops otherwise
        return
    for part in ("total", "current"):
        epochs[part]["processed"] -= 1
        epochs[part]["completed"] -= 1
        batches[part]["completed"] -= 1
    checkpoint["epoch"] = max(int(checkpoint.get("epoch", 1)) - 1, 0)


class KeptCSVWriter(ExperimentWriter):
    """Lightning's CSV writer, but an existing ``metrics.csv`` is kept (with its columns).
    Lightning's writer deletes it in its private ``_check_log_dir_exists``, called when the
    writer is made, with no option to keep it."""

    def _check_log_dir_exists(self) -> None:
        if os.path.isfile(self.metrics_file_path):
            with open(self.metrics_file_path, newline="") as fh:
                self.metrics_keys = sorted(csv.DictReader(fh).fieldnames or [])


def csv_experiment(logger, writer: type[ExperimentWriter]) -> ExperimentWriter:
    """``CSVLogger.experiment`` made of the class ``writer``: Lightning makes its writer inside
    that property (in the private ``_experiment``, on its private filesystem ``_fs``), with no
    way to choose the writer's class."""
    if logger._experiment is None:
        logger._fs.makedirs(logger.root_dir, exist_ok=True)
        logger._experiment = writer(log_dir=logger.log_dir)
    return logger._experiment


def drop_unset_wandb_anonymous(logger) -> None:
    """Leave ``anonymous`` out of the arguments ``WandbLogger`` gives ``wandb.init`` when it is
    unset: wandb warns of the key even then, and the logger keeps those arguments in its private
    ``_wandb_init`` without a public way to leave one out."""
    if logger._wandb_init.get("anonymous") is None:
        logger._wandb_init.pop("anonymous", None)


def optimizer_unscales_in_step(optimizer: Any) -> bool:
    """Whether ``optimizer`` unscales its gradients inside its own step (a fused optimizer):
    torch's private ``_step_supports_amp_scaling`` flag, which Lightning's private
    ``_optimizer_handles_unscaling`` reads to refuse clipping such an optimizer's gradients
    under mixed precision. The kit applies the same rule (:mod:`luong_lit.training.precision`);
    neither library says it publicly."""
    return bool(getattr(optimizer, "_step_supports_amp_scaling", False))


def submitit_requeue_signal() -> int:
    """The signal by which submitit asks a job to stop before a timeout or a preemption
    (``SIGUSR2`` unless ``SUBMITIT_PREEMPT_SIGNAL`` says otherwise): submitit decides it in its
    private ``JobEnvironment._usr_sig``, with no public accessor."""
    from submitit import JobEnvironment

    return int(JobEnvironment._usr_sig())


def averaged_model(callback) -> Any:
    """The averaged copy of the module a ``WeightAveraging`` callback keeps (None before fit)."""
    return callback._average_model


def swap_averaged(callback, pl_module) -> None:
    """Swap the module's weights with the averaged ones, in place (Lightning's own swap, which
    its callback makes around a validation's steps only)."""
    callback._swap_models(pl_module)


def process_group_store() -> Any:
    """The default process group's key-value store (rank 0's TCP store, which every rank
    reaches): torch keeps it behind a private name, with no public getter."""
    from torch.distributed import distributed_c10d

    return distributed_c10d._get_default_store()


GRACE_S = 10  #: what the first rank is given to say a rank was lost, before it is ended


def _gentle_terminate_all(observer) -> None:
    """Lightning's ``_ChildProcessObserver._terminate_all``, which SIGKILLs the first rank and
    the others as soon as one exits with a non-zero status: a rank that stopped on a signal
    (128+signal, the others stopping with it) is left alone; for one that died, the others are
    ended, and the first rank (whose next collective fails, and says so in one line) after
    :data:`GRACE_S` seconds only if it has not ended by then."""
    import signal
    import threading
    import time

    codes = [p.returncode for p in observer._child_processes]
    if all(c is None or c == 0 or 128 < c < 160 for c in codes):
        return
    for p in observer._child_processes:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)

    def last_resort() -> None:
        time.sleep(GRACE_S)
        os.kill(observer._main_pid, signal.SIGKILL)

    threading.Thread(target=last_resort, daemon=True).start()


def observe_ranks_gently() -> None:
    """Replace how Lightning's watch over the ranks it starts ends them
    (:func:`_gentle_terminate_all`); Lightning offers no option for it (the watch is private to
    its subprocess launcher)."""
    from lightning.fabric.strategies.launchers import subprocess_script

    subprocess_script._ChildProcessObserver._terminate_all = _gentle_terminate_all


def uploads_each_checkpoint(logger) -> bool:
    """Whether a logger uploads every checkpoint as it is saved (W&B's or MLflow's
    ``log_model="all"``): it reads the file at once, so the file must be written by then."""
    return getattr(logger, "_log_model", None) == "all"
