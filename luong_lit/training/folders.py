"""A run's folder before the run starts in it: what it holds (:func:`holds_run`), and the checks
of a single run's command line that come before Hydra writes anything and before any data is read
(:func:`check_run_start`):

* ``hydra.run.dir=RUN`` on a folder that holds a run (a checkpoint, ``results.json``, an
  evaluation), without ``ckpt_path=last``: refused in one line, with the command that resumes it
  and the way to start elsewhere; ``overwrite=true`` replaces the folder, on purpose;
* ``ckpt_path=FILE`` that does not exist, or that names a folder: one line, with what to give
  instead;
* ``ckpt_path=last`` on a finished run (``results.json``) that the command would not train
  further: it says the run is finished (:class:`Finished`), and nothing runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from luong_lit.errors import ConfigError, UserError
from luong_lit.reports import Results

LAST = Path("checkpoints") / "last.ckpt"
#: ``ckpt_path`` values that are not files (Lightning's own names, and ours)
NAMED = ("last", "best", "hpc", "registry")


class Finished(UserError):
    """A finished run asked to resume with nothing more to train: said, and the command ends
    with status 0."""


def checkpoints_in(run_dir: Path) -> list[Path]:
    folder = Path(run_dir) / "checkpoints"
    return sorted(folder.rglob("*.ckpt")) if folder.is_dir() else []


def holds_run(run_dir: Path) -> str | None:
    """What of a run ``run_dir`` holds (``"a finished run (results.json)"``, ...), or None."""
    run_dir = Path(run_dir)
    if (run_dir / "results.json").is_file():
        return "a finished run (results.json)"
    if (run_dir / LAST).is_file():
        return f"a run without results.json ({LAST} at step {step_of(run_dir / LAST)})"
    if checkpoints_in(run_dir) or list(run_dir.glob("eval_*.json")):
        return "a run's checkpoints or evaluations"
    return None


def step_of(ckpt: Path) -> str:
    """The global step a checkpoint holds (``?`` when it cannot be read)."""
    from luong_lit.checkpoint.files import read_checkpoint

    try:
        return str(read_checkpoint(ckpt, mmap=True).get("global_step", "?"))
    except Exception:  # noqa: BLE001 - unreadable: the step is not known, the refusal stands
        return "?"


def _values(argv: Sequence[str]) -> dict[str, Any]:
    """The command line's values of the keys checked here (parsed as Hydra parses them)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(argv))
    except Exception:  # noqa: BLE001 - malformed: composing it says so, in one line
        return {}
    keys = ("hydra.run.dir", "ckpt_path", "overwrite", "trainer.max_epochs", "trainer.max_steps")
    return {o.key_or_group: o.value() for o in parsed if o.key_or_group in keys}


def check_ckpt_path(value: Any) -> None:
    """``ckpt_path`` names an existing checkpoint file (or one of :data:`NAMED`)."""
    if value in (None, "") or str(value) in NAMED:
        return
    path = Path(str(value))
    if path.is_dir():
        inside = path / LAST if (path / LAST).is_file() else None
        hint = (
            f"to resume the run in it: hydra.run.dir={path} ckpt_path=last"
            if inside
            else "give a checkpoint file (RUN/checkpoints/last.ckpt or best.ckpt)"
        )
        raise ConfigError(f"ckpt_path={value} is a folder, not a checkpoint file: {hint}")
    if not path.is_file():
        raise ConfigError(
            f"ckpt_path={value}: no such file (give a checkpoint file, or ckpt_path=last with "
            f"hydra.run.dir=RUN to resume the run in RUN)"
        )


def check_run_start(argv: Sequence[str], resume_cmd) -> None:
    """The checks of the module doc, for a single run's overrides ``argv`` (``resume_cmd``: the
    command that resumes a folder); with ``overwrite=true`` the folder is removed first."""
    values = _values(argv)
    ckpt = values.get("ckpt_path")
    check_ckpt_path(ckpt)
    run_dir = values.get("hydra.run.dir")
    if run_dir is None or not Path(str(run_dir)).is_dir():
        return
    run_dir = Path(str(run_dir))
    held = holds_run(run_dir)
    if held is None or ckpt == "last" or _inside(ckpt, run_dir):
        return
    if values.get("overwrite") is True:
        shutil.rmtree(run_dir)
        return
    unfinished = (run_dir / LAST).is_file() and not (run_dir / "results.json").is_file()
    resume = f"resume it with: {resume_cmd(run_dir)}; " if unfinished else ""
    raise ConfigError(
        f"{run_dir} holds {held}, and this command would train a new run over it: {resume}"
        f"or train into another folder (another hydra.run.dir, or none for a new dated one); "
        f"overwrite=true replaces it"
    )


def _inside(ckpt: Any, run_dir: Path) -> bool:
    if ckpt in (None, "") or str(ckpt) in NAMED:
        return False
    return run_dir.resolve() in Path(str(ckpt)).resolve().parents


def check_finished(run_dir: Path, was: dict[str, Any], now: dict[str, Any]) -> None:
    """Raise :class:`Finished` when ``run_dir`` holds ``results.json`` and the resumed config
    (``now``) trains no longer than the run's (``was``: ``trainer.max_epochs``/``max_steps``)
    and asks for no test the run has not made."""
    results = Path(run_dir) / "results.json"
    if not results.is_file():
        return
    tests = list(Results.read(results).tests)
    longer = any(now.get(k) != was.get(k) for k in ("trainer.max_epochs", "trainer.max_steps"))
    if longer or (now.get("test_after_training") and not tests):  # more to train, or to test
        return
    raise Finished(
        f"{run_dir} is a finished run (results.json: {', '.join(tests) or 'no test set'}); "
        f"nothing to resume. To train it further, resume it with a larger trainer.max_epochs "
        f"or trainer.max_steps"
    )


def check_budget(run_dir: Path, now: dict[str, Any]) -> None:
    """Refuse, in one line, a resume whose ``trainer.max_epochs`` or ``max_steps`` the run has
    already passed (Lightning would stop with a traceback)."""
    from luong_lit.checkpoint.files import read_checkpoint

    try:
        ckpt = read_checkpoint(Path(run_dir) / LAST, mmap=True)
    except Exception:  # noqa: BLE001 - an unreadable checkpoint is said where it is loaded
        return
    epochs, steps = now.get("trainer.max_epochs"), now.get("trainer.max_steps")
    if isinstance(epochs, int) and epochs >= 0 and ckpt.get("epoch", 0) > epochs:
        raise ConfigError(
            f"{run_dir} has trained {ckpt['epoch']} epochs, and trainer.max_epochs={epochs} is "
            f"fewer: resume with trainer.max_epochs={ckpt['epoch']} or more"
        )
    if isinstance(steps, int) and steps >= 0 and ckpt.get("global_step", 0) > steps:
        raise ConfigError(
            f"{run_dir} has trained {ckpt['global_step']} steps, and trainer.max_steps={steps} "
            f"is fewer: resume with trainer.max_steps={ckpt['global_step']} or more"
        )
