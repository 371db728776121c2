"""The notebook's tables and groups of runs: Table 4 (runs that differ only by their seed are one
row, mean ± sd), the cells of the figures (:func:`cells`) and Table 6, AER (:func:`aer_table`).
Each reads what ``train`` and ``align`` wrote into the run directories. The ladders' tables and
figures: :mod:`luong_lit.study.ladder_views`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from luong_lit.analysis.runs import describe, run_label


def cells(runs: Sequence[Path]) -> dict[str, list[Path]]:
    """Runs grouped as :func:`table4` groups them (runs that differ only by their seed are one
    cell), each cell named as ``report`` names it: by the overrides that vary between the cells,
    not those every cell shares (:func:`~luong_lit.analysis.cells.varying`); a lone cell by its
    system (``global (general)``). :func:`with_seeds` adds what each cell holds."""
    from luong_lit.analysis.cells import varying
    from luong_lit.analysis.runs import cell_of

    groups: dict[str, list[Path]] = {}
    for run in runs:
        groups.setdefault(cell_of(run), []).append(run)
    if len(groups) == 1:
        return {run_label(runs[0]): list(runs)}
    return dict(zip(varying(list(groups)), groups.values()))


def with_seeds(cells: Mapping[str, Sequence[Path]]) -> dict[str, list[Path]]:
    """The cells' labels with how many seeds each holds (a seed run twice counts once):
    ``dropout=0.2, 2 seeds``, ``dropout=0.3, 1 seed (2 runs)``; a cell of one run as it is."""
    from luong_lit.analysis.cells import seeds_note

    return {
        label + seeds_note([describe(r).seed for r in members]): list(members)
        for label, members in cells.items()
    }


def table4(runs: Sequence[Path]) -> str:
    """Table 4 from run directories: runs that differ only by their seed are one row, mean ±
    sd (``python -m luong_lit report`` on a sweep); one row per run when no seed repeats."""
    from luong_lit.analysis.cells import group, markdown_cells
    from luong_lit.analysis.runs import collect, markdown

    rows = [collect(r) for r in runs]
    cells = group(rows)
    return markdown_cells(cells) if any(c.n > 1 for c in cells) else markdown(rows)


def _aer_row(label: str, rep: dict) -> str:
    other = rep.get("aer_by_convention", {}).get("predicted")
    unk = rep.get("unk_token_share")
    cells = [f"{rep['aer']:.3f}", "" if other is None else f"{other:.3f}"]
    cells.append("" if unk is None else f"{100 * unk:.1f} %")
    return f"| {label} | " + " | ".join(cells) + " |"


def aer_table(runs: Sequence[Path]) -> str:
    """Table 6 in Markdown: each run's AER (``align.json``), an ensemble led by it
    (``align_ensemble.json``), the predicted-word convention's AER and the share of ``<unk>``
    tokens beside it, then the baselines."""
    lines = ["| system | AER | AER, predicted word | `<unk>` tokens |", "|---|---:|---:|---:|"]
    baselines: dict[str, float] = {}
    for run in runs:
        for name in ("align.json", "align_ensemble.json"):
            if not (run / name).is_file():
                continue
            rep = json.loads((run / name).read_text())
            label = run_label(run)
            if name == "align_ensemble.json":
                label = f"ensemble of {len(rep.get('checkpoints', []))} (with {label})"
                if str(rep.get("convention", "")).startswith("per member"):
                    label += f", {rep['convention']}"  # each member read in its own convention
            lines.append(_aer_row(label, rep))
            baselines.update(rep.get("baselines", {}))
    if len(lines) == 2:
        return (
            "No run has an AER yet: `python -m luong_lit align RUN/checkpoints/best.ckpt "
            "--rwth --baselines` writes `RUN/align.json`.\n"
        )
    lines += [f"| {name} | {value:.3f} | | |" for name, value in baselines.items()]
    return "\n".join(lines) + "\n"
