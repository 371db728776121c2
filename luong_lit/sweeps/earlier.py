"""What a job of a ``-m`` sweep finds of an earlier try (:func:`earlier_work`): a job launched
again into the same directory (a requeued SLURM job, or a sweep run again with
``hydra.sweep.dir=<the sweep>``) resumes from its ``last.ckpt``, and a finished one
(``results.json``) is not trained again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from luong_lit.sweeps.job import sweep_job


def earlier_work(cfg: DictConfig) -> tuple[str, Any] | None:
    """In a sweep's job: ``("done", results)`` when this directory holds a finished run,
    ``("resume", last.ckpt)`` when it holds an interrupted one, else None."""
    if sweep_job() is None or cfg.get("ckpt_path"):
        return None
    out = Path(cfg.paths.output_dir)
    if (out / "results.json").is_file():
        return "done", json.loads((out / "results.json").read_text())
    last = out / "checkpoints" / "last.ckpt"
    return ("resume", str(last)) if last.is_file() else None
