"""Where a training run lives and what it finds there, as one object (:class:`RunFolder`).

:meth:`RunFolder.open` reads the composed config once and answers what the run is:

* ``fresh``: nothing to resume; a config composed outside a Hydra app is given a folder of its
  own here (``paths.log_dir/TASK/runs/DATE_TIME``), as Hydra gives one;
* ``resume``: ``ckpt_path`` names a checkpoint (``last``: the folder's ``last.ckpt``), or a
  sweep's job launched again into its folder finds its ``last.ckpt``;
* ``finished``: a sweep's job whose folder holds ``results.json`` (not trained again).

What it refuses (``ckpt_path=last`` with nothing to resume; another model's checkpoint; a
fine-tuned model that contradicts its checkpoint) is one line, a
:class:`~luong_lit.config.ConfigError`, before any data is read. The refusals of a command
line before Hydra starts (an unfinished run in the way, a finished one, a changed setting) are
:mod:`luong_lit.training.folders`'s; the lines a run prints at its end are
:mod:`luong_lit.training.run_lines`'s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from omegaconf import DictConfig

from luong_lit.checkpoint.resumable import check_resumable, resumed_checkpoint
from luong_lit.sweeps.earlier import earlier_work
from luong_lit.sweeps.job import sweep_job
from luong_lit.training.folders import give_run_folder, step_of
from luong_lit.training.resume import LAST, nothing_to_resume

log = logging.getLogger(__name__)

Kind = Literal["fresh", "resume", "finished"]


@dataclass(frozen=True)
class RunFolder:
    """A run's folder (``path``), what the run is there (``kind``), the checkpoint the fit
    resumes from as the trainer takes it (``ckpt_path``: a file or ``last``), a finished run's
    ``results.json`` (``results``) and whether a sweep's earlier try was found (``again``)."""

    path: Path
    kind: Kind
    ckpt_path: str | None = None
    results: dict[str, Any] | None = None
    again: bool = False

    @classmethod
    def open(cls, cfg: DictConfig) -> RunFolder:
        """The run ``cfg`` describes, its folder made if it has none; refused in one line where
        ``ckpt_path=last`` finds nothing to resume."""
        give_run_folder(cfg)  # composed outside a Hydra app: a folder of its own
        path = Path(cfg.paths.output_dir)
        earlier = earlier_work(cfg)
        if earlier and earlier[0] == "done":
            return cls(path, "finished", results=earlier[1], again=True)
        ckpt_path = earlier[1] if earlier else cfg.get("ckpt_path")
        if ckpt_path == "last" and sweep_job() is None and not (path / LAST).is_file():
            raise nothing_to_resume(path, cfg.paths.log_dir, cfg.get("task_name", "train"))
        kind: Kind = "resume" if ckpt_path else "fresh"
        return cls(path, kind, ckpt_path and str(ckpt_path), again=bool(earlier))

    def checkpoint(self, cfg: DictConfig) -> Path | None:
        """The file the fit resumes from, if it exists (None for a fresh run)."""
        found = resumed_checkpoint(cfg, self.ckpt_path)
        return found if found is not None and found.is_file() else None

    def check(self, cfg: DictConfig) -> None:
        """Refuse, before any work, a fine-tuned model that contradicts its checkpoint and a
        checkpoint of another model (each one line); a fine-tuned run reads its model here."""
        from luong_lit.training import finetune

        finetune.source_of(cfg)
        check_resumable(cfg, self.ckpt_path)

    def say_start(self, cfg: DictConfig) -> None:
        """The line a resumed run starts with: what it resumes, from which step."""
        if self.kind != "resume":
            return
        path = resumed_checkpoint(cfg, self.ckpt_path)
        step = step_of(path) if path and path.is_file() else "?"
        log.info("resuming %sfrom %s at step %s", "this sweep job " if self.again else "",
                 path or self.ckpt_path, step)  # fmt: skip

    def finished_metrics(self) -> dict[str, Any]:
        """What :func:`~luong_lit.training.run.train` returns for a finished run (its line
        said): its results, and the objective a sweeper reads."""
        log.info("%s holds a finished run: not trained again", self.path)
        results = self.results or {}
        return {"test": results, "objective": results.get("objective_value")}
