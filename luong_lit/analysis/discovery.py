"""Where the analysis notebook finds its runs and writes its figures: run directories (with
``.hydra/config.yaml``) matched by paths or glob patterns (:func:`find_runs`), looked up from the
folder Jupyter was started in, and the figures' folder (:func:`figures_dir`). A pattern that
matches nothing is named at once, with the folders it was looked up in.
"""

from __future__ import annotations

import glob
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

from luong_lit.analysis.runs import is_run

SWEEPS = "logs/train/multiruns/*/*"
DEFAULT_RUNS = f"logs/train/runs/*,{SWEEPS}"


def search_folders() -> list[Path]:
    """Where relative patterns are resolved, in order: the folder the user started Jupyter
    from (``$PWD``: a kernel's own working directory is the notebook's folder), the working
    directory, and the source tree the kit runs from (where ``python -m luong_lit train``
    writes ``logs/`` in a checkout)."""
    folders = [os.environ.get("PWD"), os.getcwd(), str(Path(__file__).resolve().parents[2])]
    out: list[Path] = []
    for f in folders:
        if f and Path(f).resolve() not in out:
            out.append(Path(f).resolve())
    return out


def _matches(pattern: str, folders: Sequence[Path]) -> list[Path]:
    if Path(pattern).is_absolute():
        return sorted(p for p in map(Path, glob.glob(pattern)) if is_run(p))
    for folder in folders:
        found = sorted(folder / m for m in glob.glob(pattern, root_dir=folder))
        found = [p for p in found if is_run(p)]
        if found:
            return found
    return []


def find_runs(patterns: str | Sequence[str], folders: Sequence[Path] | None = None) -> list[Path]:
    """Run directories (with ``.hydra/config.yaml``) matching paths or glob patterns (a list,
    or one comma-separated string), all resolved in the first of ``folders`` where one
    matches. A pattern that matches nothing is named at once, with the
    folders it was resolved from: a warning when other patterns matched, else an error."""
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    folders = list(folders) if folders is not None else search_folders()
    # all patterns from one folder: the first where any matches (runs of two projects never mix)
    per_folder = ([_matches(p.strip(), [f]) for p in patterns] for f in folders)
    chosen: list[list[Path]] = next((m for m in per_folder if any(m)), [[] for _ in patterns])
    runs: list[Path] = []
    empty = []
    for pattern, found in zip(patterns, chosen):
        runs += [r for r in found if r not in runs]
        if not found:
            empty.append(pattern)
    where = ", ".join(map(str, folders))
    if not runs:
        raise FileNotFoundError(
            f"no run directory (one with .hydra/config.yaml) matches {', '.join(patterns)!s}; "
            f"relative patterns were looked up in: {where}. Set LUONG_LIT_RUNS to run "
            "directories or globs, e.g. LUONG_LIT_RUNS='logs/train/runs/*'"
        )
    for pattern in empty:
        if pattern.strip() == SWEEPS:  # the default's sweeps: none run yet, nothing amiss
            print(f"no sweeps yet ({SWEEPS} is empty in {where})")
            continue
        warnings.warn(f"{pattern!r} matches no run directory (looked in: {where})", stacklevel=2)
    return runs


def figures_dir() -> Path:
    """Where the notebook writes its figures: ``LUONG_LIT_FIGURES`` (a relative path is taken
    from the folder Jupyter was started in, as the run patterns are), else ``figures/`` there."""
    folder = Path(os.environ.get("LUONG_LIT_FIGURES", "figures")).expanduser()
    return folder if folder.is_absolute() else search_folders()[0] / folder
