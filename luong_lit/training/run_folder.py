"""Where a training run lives and what it finds there, as one object (:class:`RunFolder`).

:meth:`RunFolder.open` reads the composed config once and answers what the run is:

* ``fresh``: nothing to resume; a config composed outside a Hydra app is given a folder of its
  own here (``paths.log_dir/TASK/runs/DATE_TIME``), as Hydra gives one;
* ``resume``: ``ckpt_path`` names a checkpoint (``last``: the folder's ``last.ckpt``), or a
  sweep's job launched again into its folder (a requeued SLURM job, a sweep run again with
  ``hydra.sweep.dir=<the sweep>``) finds its ``last.ckpt``;
* ``finished``: a sweep's job whose folder holds ``results.json`` (not trained again).

What it refuses (``ckpt_path=last`` with nothing to resume; another model's checkpoint; a
fine-tuned model that contradicts its checkpoint) is one line, a
:class:`~luong_lit.config.ConfigError`, before any data is read; with nothing to resume, it lists
the runs that can be (:func:`nothing_to_resume`). It says the lines a run starts with
(:meth:`RunFolder.say_start`) and the command that resumes it (:func:`resume_command`), and writes
a finished run's ``results.json`` (:meth:`RunFolder.finish`). The refusals of a command line before
Hydra starts (an unfinished run in the way, a finished one, a changed setting) are
:mod:`luong_lit.training.folders`'s; the lines a run prints at its end are
:mod:`luong_lit.training.run_lines`'s.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from omegaconf import DictConfig

from luong_lit.checkpoint.files import read_checkpoint
from luong_lit.checkpoint.meta import CheckpointMeta
from luong_lit.checkpoint.resumable import check_resumable
from luong_lit.errors import ConfigError
from luong_lit.reports import Results
from luong_lit.sweeps.job import sweep_job
from luong_lit.training import finetune
from luong_lit.training.folders import LAST, NAMED

log = logging.getLogger(__name__)

Kind = Literal["fresh", "resume", "finished"]
RESULTS = "results.json"


@dataclass(frozen=True)
class RunFolder:
    """A run's folder (``path``), what the run is there (``kind``), the checkpoint the fit
    resumes from as the trainer takes it (``ckpt_path``: a file or ``last``) and as a file
    (``resume_from``, where it is one) with its step (``step``), a fine-tuned run's start
    (``start``, ``init_from``'s checkpoint read once) and the vocabularies its model keeps
    (``vocab``: its own checkpoint's where it resumes), a finished run's
    ``results.json`` (``results``) and whether a sweep's earlier try was found (``again``)."""

    path: Path
    kind: Kind
    ckpt_path: str | None = None
    resume_from: Path | None = None
    step: str = "?"
    start: finetune.Start | None = None
    vocab: finetune.Vocab | None = None
    results: Results | None = None
    again: bool = False

    @classmethod
    def open(cls, cfg: DictConfig) -> RunFolder:
        """The run ``cfg`` describes, its folder made if it has none; refused in one line
        where there is nothing to resume or the checkpoint is another model's."""
        give_run_folder(cfg)  # composed outside a Hydra app: a folder of its own
        path, ckpt_path, job = Path(cfg.paths.output_dir), cfg.get("ckpt_path"), sweep_job()
        if job is not None and not ckpt_path:  # a sweep's job: what an earlier try left
            if (path / RESULTS).is_file():
                results = Results.read(path / RESULTS)
                log.info("%s holds a finished run: not trained again", path)
                return cls(path, "finished", results=results, again=True)
            ckpt_path = str(path / LAST) if (path / LAST).is_file() else None
            again = ckpt_path is not None
        else:
            again = False
        if ckpt_path == "last" and job is None and not (path / LAST).is_file():
            raise nothing_to_resume(path, cfg.paths.log_dir, cfg.get("task_name", "train"))
        file = _file_of(path, ckpt_path)
        start = finetune.start_of(cfg)  # a fine-tuned run's model read: refused, or taken
        vocab = None if start is None else start.vocab
        step = "?"  # the step resumed from, for the start line
        if file is not None:  # the file resumed, read once (its tensors mapped, not read)
            ckpt = read_checkpoint(file, mmap=True)
            meta, step = CheckpointMeta.of(ckpt, file), str(ckpt.get("global_step", "?"))
            check_resumable(file, cfg.model.net, str(ckpt_path), meta)  # another model's: no
            if start is not None:  # its own weights and vocabularies, not init_from's
                start, vocab = replace(start, weights={}), finetune.vocabularies(meta)
        kind: Kind = "resume" if ckpt_path else "fresh"
        resumed = ckpt_path and str(ckpt_path)
        return cls(path, kind, resumed, file, step, start, vocab, again=again)

    def say_start(self, trainer, data: DictConfig) -> None:
        """The lines a run starts with, once its trainer is built: mixed precision on the CPU
        (:func:`~luong_lit.training.precision.note_cpu_mixed`), a data-parallel step's batch,
        and what a resumed run resumes, from which step."""
        from luong_lit.training.precision import note_cpu_mixed

        note_cpu_mixed(trainer)
        ranks = trainer.world_size
        if ranks > 1 and trainer.is_global_zero:
            each, unit = data.batch_size, data.get("batch_by", "sentences")
            log.info("data-parallel: %d ranks x %s %s (data.batch_size, each rank's) = %s %s "
                     "a step", ranks, each, unit, ranks * int(each), unit)  # fmt: skip
        if self.kind == "resume":
            log.info("resuming %sfrom %s at step %s", "this sweep job " if self.again else "",
                     self.resume_from or self.ckpt_path, self.step)  # fmt: skip

    def finish(self, results: Results, rank_zero: bool = True) -> None:
        """Write ``results.json`` (rank 0's): a finished run, as sweeps and resumes read it."""
        if rank_zero:
            (self.path / RESULTS).write_text(json.dumps(results.to_json(), indent=2))

    @property
    def finished(self) -> dict[str, Any] | None:
        """What :func:`~luong_lit.training.run.train` returns for a finished run: its results,
        and the objective a sweeper reads; None for a run to train."""
        if self.kind != "finished":
            return None
        results = self.results or Results()
        return {"test": results.to_json(), "objective": results.objective_value}


def _file_of(path: Path, ckpt_path: Any) -> Path | None:
    """The file ``ckpt_path`` names (``last``: the run's ``last.ckpt``) where it exists."""
    if not ckpt_path or (str(ckpt_path) in NAMED and ckpt_path != "last"):
        return None
    found = path / LAST if ckpt_path == "last" else Path(str(ckpt_path))
    return found if found.is_file() else None


def give_run_folder(cfg) -> None:
    """A config composed outside a Hydra app (``luong_lit.config.compose``, a notebook or a
    script) has no run folder (``paths.output_dir`` reads Hydra's): it is given a new one, as a
    Hydra run would be (``paths.log_dir/TASK/runs/DATE_TIME``), with its config saved there."""
    from omegaconf import OmegaConf, open_dict

    try:
        OmegaConf.select(cfg, "paths.output_dir", throw_on_resolution_failure=True)
        return
    except Exception:  # noqa: BLE001 - ${hydra:...} outside a Hydra app
        pass
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    folder = Path(str(cfg.paths.log_dir)) / str(cfg.get("task_name", "train")) / "runs" / stamp
    n = 1
    while folder.exists():  # two runs started in one second
        folder, n = folder.with_name(f"{stamp}_{n}"), n + 1
    with open_dict(cfg):
        cfg.paths.output_dir = str(folder)
    (folder / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, folder / ".hydra" / "config.yaml")
    log.info("run folder: %s", folder.resolve())


def resume_override(run_dir: Path) -> str:
    """``hydra.run.dir=...`` for ``run_dir``, quoted for the shell and for Hydra's parser (a
    sweep job's directory holds ``=`` and ``,``)."""
    return shlex.quote(f'hydra.run.dir="{run_dir}"')


def resume_command(run_dir: Path) -> str:
    """The whole command that resumes the run in ``run_dir`` (its settings: its folder's)."""
    return f"python -m luong_lit.train {resume_override(run_dir)} ckpt_path=last"


def resumable_runs(log_dir: str | Path, task: str = "train", n: int = 5) -> list[Path]:
    """The ``n`` newest unfinished run folders under ``log_dir/task`` (runs and sweeps' jobs):
    those that hold a ``checkpoints/last.ckpt`` and no ``results.json``, newest first."""
    root = Path(log_dir) / task
    found = [*root.glob(f"runs/*/{LAST}"), *root.glob(f"multiruns/*/*/{LAST}")]
    found = [p for p in found if not (p.parent.parent / "results.json").is_file()]
    found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return [p.parent.parent for p in found[:n]]


def nothing_to_resume(
    run_dir: Path | None, log_dir: str | Path, task: str = "train"
) -> ConfigError:
    """The error of ``ckpt_path=last`` with nothing to resume in ``run_dir`` (None: not
    given), listing the runs that can be resumed and the command that resumes the newest."""
    if run_dir is None:
        head = "ckpt_path=last resumes the run in hydra.run.dir=RUN, and none is given"
    elif not run_dir.is_dir():
        head = f"ckpt_path=last: nothing to resume, {run_dir} does not exist"
    else:
        head = f"ckpt_path=last: nothing to resume in {run_dir}, it holds no {LAST}"
    runs = resumable_runs(log_dir, task)
    if not runs:
        root = Path(log_dir) / task
        finished = [*root.glob("runs/*/results.json"), *root.glob("multiruns/*/*/results.json")]
        if finished:
            return ConfigError(
                f"{head}; no unfinished run under {root}: {len(finished)} runs "
                f"there have finished (results.json), and none other holds a "
                f"{LAST}"
            )
        return ConfigError(f"{head}; no run under {root} holds a {LAST}")
    listed = ", ".join(
        f"{r} (saved {time.strftime('%Y-%m-%d %H:%M', time.localtime((r / LAST).stat().st_mtime))})"
        for r in runs
    )
    return ConfigError(
        f"{head}; runs that can be resumed, newest first: {listed}; resume the newest with: "
        f"{resume_command(runs[0])}"
    )
